"""Operations routes: the event log (long-poll and server-sent events), stats, metrics."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from tenure.core.validate import MAX_LIMIT, MAX_WAIT_MS, bearer_token
from tenure.server.http import openapi
from tenure.server.http import ops_schemas as o
from tenure.server.http.deps import Caller, St, State, text_query
from tenure.server.http.scrape import check_token
from tenure.server.runtime.feed import RECHECK_S, Filters, HeldStream, Page, read_page_async
from tenure.verbs import fields as f
from tenure.verbs import replies as r

P = openapi.problem_responses
KEEPALIVE_S = 15.0
STREAM_BATCH = 500
EVENT_TYPES = (
    "acquired, released, expired, force_released, taken_over, conflict, extended, claimed, "
    "completed, progress, dispatched, reassigned, stalled, item_created, item_edited, "
    "item_status, principal_created, principal_roles_set, principal_removed, token_issued, "
    "token_revoked, …"
)

After = Annotated[int, Query(ge=0, le=f.MAX_INT, description="an event id (the cursor)")]
KeyFilter = Annotated[str | None, Query(json_schema_extra=f.key_schema("events of"))]
ItemFilter = Annotated[
    str | None,
    Query(
        description="events of this item (its key items/<id>)",
        json_schema_extra={"maxLength": 256, "pattern": f.ITEM_FILTER_PATTERN},
    ),
]
HolderFilter = Annotated[str | None, text_query(256, "events of this holder")]
TypeFilter = Annotated[str | None, text_query(64, f"events of this type ({EVENT_TYPES})")]


def add_ops_routes(app: FastAPI) -> None:
    @app.get(
        "/v1/events", response_model=r.EventsReply, tags=["operations"], responses=P(401, 413, 422)
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

        One read examines a bounded stretch of the log: `next` moves past every event it
        examined, matched or not, so a filtered reader always advances (an empty page with a
        larger `next` means: ask again at once). With `wait_ms`, once the log is read to its
        end an empty answer waits (long-poll) until a matching event is recorded or the wait
        ends; each principal may hold a limited number of waits open (else `429`)."""
        filters = Filters(key, item, holder, type)
        if not wait_ms:
            page = await _page(st, after, filters, limit)
            return {"events": [e.to_dict() for e in page.events], "next": page.next}
        with st.slots.hold(me.name):
            return await _long_poll(st, after, filters, limit, wait_ms)

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
        filters = Filters(key, item, holder, type)
        await read_page_async(st.service, start, filters, 1, 1)  # bad filters: 422 now
        st.slots.take(me.name)  # one of the caller's open waits (past the cap: 429) ...
        token = bearer_token(request.headers.get("authorization")) or ""  # it authenticated
        frames = _frames(st, start, filters, token)
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return HeldStream(  # ... until the stream ends
            frames,
            lambda: st.slots.give_back(me.name),
            media_type="text/event-stream",
            headers=headers,
        )

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
    def metrics(
        st: St, authorization: Annotated[str | None, Header(include_in_schema=False)] = None
    ) -> PlainTextResponse:
        """Prometheus metrics (text format 0.0.4). No principal's token needed, as scrapers
        expect; the server may want its own metrics token. The database's figures are
        refreshed every few seconds, not on every scrape."""
        check_token(authorization, st.limits.metrics_token)
        text = st.service.metrics.render(st.scrape.get())
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def _page(st: State, after: int, filters: Filters, limit: int) -> Page:
    return await read_page_async(st.service, after, filters, limit, st.limits.event_scan)


async def _long_poll(
    st: State, after: int, filters: Filters, limit: int, wait_ms: int
) -> dict[str, Any]:
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        seen = st.bell.rung
        page = await _page(st, after, filters, limit)
        left = deadline - time.monotonic()
        if page.events or not page.caught_up or left <= 0 or st.bell.closing:
            return {"events": [e.to_dict() for e in page.events], "next": page.next}
        after = page.next  # read to the end: wait from there
        await st.bell.wait(seen, min(left, RECHECK_S))


async def _frames(st: State, after: int, filters: Filters, token: str) -> AsyncIterator[str]:
    """The stream's frames; it ends when ``token`` stops authenticating (revoked, expired),
    checked before every read, so at least every second (``RECHECK_S``)."""
    yield "retry: 1000\n\n"
    quiet_since = time.monotonic()
    while not st.bell.closing:
        if not await st.auth.still_valid(token):
            yield ": the token no longer authenticates (revoked or expired)\n\n"
            return
        seen = st.bell.rung
        page = await _page(st, after, filters, STREAM_BATCH)
        for event in page.events:
            data = json.dumps(event.to_dict(), separators=(",", ":"))
            yield f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n"
        after = page.next
        if page.events:
            quiet_since = time.monotonic()
        if not page.caught_up:
            continue
        if not page.events and time.monotonic() - quiet_since >= KEEPALIVE_S:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        await st.bell.wait(seen, RECHECK_S)
