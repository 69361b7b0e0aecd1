"""Operations routes written by hand: the event log (``GET /v1/events``, whose long-poll waits on
the event bell, and its server-sent events stream) and the metrics.

``GET /v1/events`` is the :data:`tenure.verbs.ops.EVENTS` verb: the route parses its query with
the verb's input, runs the verb when there is no ``wait_ms``, and answers with the verb's
``wire`` either way; only its long-poll is this module's (it ends as soon as its client leaves,
giving back the caller's open wait). The stats and timeline are ordinary routes of the verb
table."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Header, Query, Request, Response
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import create_model

from tenure.core.validate import bearer_token
from tenure.server.http import openapi
from tenure.server.http.deps import Caller, St, State, reply
from tenure.server.http.scrape import check_token
from tenure.server.http.verb_routes import query_model
from tenure.server.http.waiting import CLIENT_GONE
from tenure.server.runtime.departure import Departure, watching
from tenure.server.runtime.feed import RECHECK_S, HeldStream, read_page_async
from tenure.verbs import ops as ov
from tenure.verbs.ops import EventPage, Filters

P = openapi.problem_responses
KEEPALIVE_S = 15.0
STREAM_BATCH = 500
#: the verbs of the table whose routes are this module's
HAND_SERVED = (ov.EVENTS,)
_EVENTS_QUERY: Any = query_model(ov.EVENTS)
EventsQuery = Annotated[_EVENTS_QUERY, Query()]

#: the stream's query: the filters and the cursor of the events verb's input (no page size, no
#: wait: it follows the log for as long as the caller stays)
_STREAM_QUERY: Any = create_model(  # type: ignore[call-overload]
    "EventStreamQuery",
    **{
        name: (info.annotation, info)
        for name, info in ov.EventsIn.model_fields.items()
        if name in ("after", "key", "item", "holder", "type")
    },
)
StreamQuery = Annotated[_STREAM_QUERY, Query()]


def add_ops_routes(app: FastAPI) -> None:
    @app.get(
        ov.EVENTS.path,
        response_model=ov.EVENTS.reply,
        tags=list(ov.EVENTS.tags),
        responses=P(*ov.EVENTS.problems),
        description=ov.EVENTS.doc,
    )
    async def events(request: Request, me: Caller, st: St, query: EventsQuery) -> Response:
        args = ov.EVENTS.input.model_validate(query.model_dump(exclude_unset=True))
        if not args.wait_ms:
            page = await anyio.to_thread.run_sync(ov.EVENTS.run, st.services, me, args)
            return reply(ov.events_wire(page))
        with st.slots.hold(me.name):  # given back as soon as the client leaves
            async with watching(request.receive) as departure:
                found = await _long_poll(st, args, departure)
        return Response(status_code=CLIENT_GONE) if found is None else reply(found)

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
        query: StreamQuery,
        last_event_id: Annotated[
            str | None, Header(pattern=r"^[0-9]{1,18}$", description="resume after this id")
        ] = None,
    ) -> StreamingResponse:
        """Follow the event log as server-sent events, from `after` (or `Last-Event-ID`)."""
        start = int(last_event_id) if last_event_id is not None else query.after
        filters = ov.filters_of(query)
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
        now = {
            "tenure_open_waits": st.slots.total(),
            "tenure_waiting_acquisitions": st.waiters.total(),
        }
        text = st.service.metrics.render(st.scrape.get(), now)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")


async def _page(st: State, after: int, filters: Filters, limit: int) -> EventPage:
    return await read_page_async(st.service, after, filters, limit, st.limits.event_scan)


async def _long_poll(st: State, args: ov.EventsIn, departure: Departure) -> dict[str, Any] | None:
    """Read the log to its end, then wait for a ring of the event bell (and read again) until
    a page has events or the wait ends; ``None`` once the client left (nobody to answer)."""
    after, filters = args.after, ov.filters_of(args)
    deadline = time.monotonic() + args.wait_ms / 1000
    while not departure.gone:
        seen = st.bell.rung
        page = await _page(st, after, filters, args.limit)
        left = deadline - time.monotonic()
        if page.events or not page.caught_up or left <= 0 or st.bell.closing:
            return ov.events_wire(page)
        after = page.next  # read to the end: wait from there
        await st.bell.wait(seen, min(left, RECHECK_S), departure)
    return None


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
