"""Operations routes: the event log (long-poll and server-sent events), stats, metrics."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Header, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from tenure.core.models import Event
from tenure.core.validate import MAX_LIMIT
from tenure.server import openapi
from tenure.server import ops_schemas as o
from tenure.server import schemas as s
from tenure.server.app import Caller, St, State, text_query
from tenure.server.feed import RECHECK_S

P = openapi.problem_responses
MAX_WAIT_MS = 300_000  # as for acquire
KEEPALIVE_S = 15.0
STREAM_BATCH = 500
EVENT_TYPES = (
    "acquired, released, expired, force_released, taken_over, conflict, extended, claimed, "
    "completed, progress, dispatched, reassigned, stalled, item_created, item_edited, "
    "item_status, principal_created, token_issued, token_revoked, …"
)

After = Annotated[int, Query(ge=0, le=s.MAX_INT, description="an event id (the cursor)")]
KeyFilter = Annotated[str | None, Query(json_schema_extra=s.key_schema("events of"))]
ItemFilter = Annotated[
    str | None,
    Query(
        description="events of this item (its key items/<id>)",
        json_schema_extra={"maxLength": 256, "pattern": s.ITEM_FILTER_PATTERN},
    ),
]
HolderFilter = Annotated[str | None, text_query(256, "events of this holder")]
TypeFilter = Annotated[str | None, text_query(64, f"events of this type ({EVENT_TYPES})")]


def add_ops_routes(app: FastAPI) -> None:
    @app.get(
        "/v1/events", response_model=s.EventsReply, tags=["operations"], responses=P(401, 413, 422)
    )
    async def events(
        me: Caller,
        st: St,
        after: After = 0,
        key: KeyFilter = None,
        item: ItemFilter = None,
        holder: HolderFilter = None,
        type: TypeFilter = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
        wait_ms: Annotated[int, Query(ge=0, le=MAX_WAIT_MS)] = 0,
    ) -> dict[str, Any]:
        """Events after the cursor `after`, oldest first; `next` is the cursor to go on from.

        With `wait_ms`, an empty answer waits (long-poll) until a matching event is recorded
        or the wait ends."""
        deadline = time.monotonic() + wait_ms / 1000
        while True:
            seen = st.bell.rung
            found = await _read(st, after, key, item, holder, type, limit)
            left = deadline - time.monotonic()
            if found or left <= 0 or st.bell.closing:
                return {"events": [e.to_dict() for e in found], "next": _next(found, after)}
            await st.bell.wait(seen, min(left, RECHECK_S))

    @app.get(
        "/v1/events/stream",
        tags=["operations"],
        responses={
            200: {
                "description": "server-sent events: `id`, `event` (the type), `data` (the event)",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            **P(401, 413, 422),
        },
        response_class=StreamingResponse,
    )
    async def event_stream(
        request: Request,
        me: Caller,
        st: St,
        after: After = 0,
        key: KeyFilter = None,
        item: ItemFilter = None,
        holder: HolderFilter = None,
        type: TypeFilter = None,
        last_event_id: Annotated[
            str | None, Header(pattern=r"^[0-9]{1,18}$", description="resume after this id")
        ] = None,
    ) -> StreamingResponse:
        """Follow the event log as server-sent events, from `after` (or `Last-Event-ID`)."""
        start = int(last_event_id) if last_event_id is not None else after
        await _read(st, start, key, item, holder, type, 1)  # bad filters: 422 before streaming
        frames = _frames(st, start, key, item, holder, type)
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(frames, media_type="text/event-stream", headers=headers)

    @app.get("/v1/stats", response_model=o.StatsReply, tags=["operations"], responses=P(401))
    def stats(me: Caller, st: St) -> dict[str, Any]:
        """Counts by ending, the expired share over 1 h and 24 h, contention, hold times."""
        return st.service.stats()

    @app.get(
        "/v1/stats/timeline",
        response_model=o.TimelineReply,
        tags=["operations"],
        responses=P(401, 422),
    )
    def timeline(
        me: Caller,
        st: St,
        span_ms: Annotated[int, Query(ge=1000, le=7 * 86_400_000)] = 3_600_000,
        bucket_ms: Annotated[int, Query(ge=1000, le=7 * 86_400_000)] = 60_000,
    ) -> dict[str, Any]:
        """Lease endings per bucket, oldest first. At most 1440 buckets: a finer `bucket_ms`
        is widened, and the reply's `bucket_ms` is the one used."""
        return st.service.timeline(span_ms, bucket_ms)

    @app.get(
        "/metrics",
        tags=["operations"],
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    def metrics(st: St) -> PlainTextResponse:
        """Prometheus metrics (text format 0.0.4); no token needed, as scrapers expect."""
        text = st.service.metrics.render(st.service.stats())
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def _read(
    st: State,
    after: int,
    key: str | None,
    item: str | None,
    holder: str | None,
    type: str | None,
    limit: int,
) -> list[Event]:
    return await anyio.to_thread.run_sync(
        lambda: st.service.events(after, key, holder, type, limit, item)
    )


def _next(found: list[Event], after: int) -> int:
    return found[-1].id if found else after


async def _frames(
    st: State,
    after: int,
    key: str | None,
    item: str | None,
    holder: str | None,
    type: str | None,
) -> AsyncIterator[str]:
    yield "retry: 1000\n\n"
    quiet_since = time.monotonic()
    while not st.bell.closing:
        seen = st.bell.rung
        found = await _read(st, after, key, item, holder, type, STREAM_BATCH)
        for event in found:
            data = json.dumps(event.to_dict(), separators=(",", ":"))
            yield f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n"
        after = _next(found, after)
        if found:
            quiet_since = time.monotonic()
            if len(found) == STREAM_BATCH:
                continue
        elif time.monotonic() - quiet_since >= KEEPALIVE_S:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        await st.bell.wait(seen, RECHECK_S)
