"""The operations verbs: a page of the event log, the stats and the timeline.

``GET /v1/events`` is the one route of the table that a server serves by hand
(:mod:`tenure.server.http.ops`): its long-poll (``wait_ms``) waits on the server's event bell,
which no table entry can express. That route parses its query with :data:`EVENTS`' input and
answers with its ``wire``; without ``wait_ms`` it runs the verb itself. Direct mode serves
``wait_ms`` by polling the verb.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from tenure.core.models import Event, Principal
from tenure.core.validate import MAX_LIMIT, MAX_WAIT_MS
from tenure.verbs.fields import (
    ITEM_FILTER_PATTERN,
    MAX_INT,
    Body,
    key_schema,
    text_field,
)
from tenure.verbs.principals import NoArgs
from tenure.verbs.replies import EventsReply, Out
from tenure.verbs.table import Family, Reply, Services

if TYPE_CHECKING:
    from tenure.service.leases import Service

EVENT_TYPES = (
    "acquired, released, expired, force_released, taken_over, transferred, conflict, "
    "extended, claimed, "
    "completed, progress, dispatched, reassigned, stalled, item_created, item_edited, "
    "item_status, principal_created, principal_roles_set, principal_removed, token_issued, "
    "token_revoked, …"
)
DAY_MS = 86_400_000


class EventsIn(Body):
    after: Annotated[int, Field(ge=0, le=MAX_INT, description="an event id (the cursor)")] = 0
    key: Annotated[str | None, Field(json_schema_extra=key_schema("events of"))] = None
    item: Annotated[
        str | None,
        Field(
            description="events of this item (its key items/<id>)",
            json_schema_extra={"maxLength": 256, "pattern": ITEM_FILTER_PATTERN},
        ),
    ] = None
    holder: Annotated[str | None, text_field(256, "events of this holder")] = None
    type: Annotated[str | None, text_field(64, f"events of this type ({EVENT_TYPES})")] = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 100
    wait_ms: Annotated[int, Field(ge=0, le=MAX_WAIT_MS)] = 0


@dataclass(frozen=True)
class Filters:
    key: str | None = None
    item: str | None = None
    holder: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class EventPage:
    """One bounded read of the event log: the events found, the cursor to go on from, and
    whether the read reached the newest event (else there is more to read at once; the
    server's own knowledge, not sent: a client reads ``True``)."""

    events: list[Event]
    next: int
    caught_up: bool = True


def read_page(service: Service, after: int, filters: Filters, limit: int, scan: int) -> EventPage:
    """Events after ``after`` that match ``filters``, among at most ``scan`` event ids and
    never past the newest committed event. The cursor moves past every id examined, matched or
    not, so a filtered follower never reads the same stretch twice: the last event returned
    when the page is full, else the end of the window."""
    head = service.store.last_event_id()
    upto = max(after, min(head, after + scan))
    f = filters
    found = service.events(
        after, upto=upto, limit=limit, key=f.key, item=f.item, holder=f.holder, type=f.type
    )
    if len(found) >= limit:
        return EventPage(found, found[-1].id, False)
    return EventPage(found, upto, upto >= head)


def filters_of(query: Any) -> Filters:
    """The filters of the events verb's input (or of a query with the same fields)."""
    return Filters(query.key, query.item, query.holder, query.type)


def events_wire(page: EventPage) -> dict[str, Any]:
    return {"events": [e.to_dict() for e in page.events], "next": page.next}


def _event_page(data: Any) -> EventPage:
    found = [Event.from_wire(item) for item in data["events"]]
    return EventPage(found, int(data.get("next") or 0))


class TimelineIn(Body):
    span_ms: Annotated[int, Field(ge=1000, le=7 * DAY_MS)] = 3_600_000
    bucket_ms: Annotated[int, Field(ge=1000, le=7 * DAY_MS)] = 60_000


def json_object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    return data


# the replies --------------------------------------------------------------------------------
class Endings(Out):
    released: int
    expired: int
    force_released: int
    taken_over: int
    completed: int


class Window(Out):
    endings: Endings
    ended: int
    expired_share: float | None = Field(description="expired / ended; null with no endings")
    acquisitions: int
    conflicts: int


class HotKey(Out):
    key: str
    conflicts: int


class ExpiringHolder(Out):
    holder: str
    expired: int
    ended: int
    expired_share: float | None


class HoldTimes(Out):
    count: int = Field(description="endings in the last 24 h (up to the newest 100,000)")
    p50: int | None
    p99: int | None


class StatsReply(Out):
    now: int = Field(description="the server's clock, ms since the epoch")
    endings: Endings = Field(description="all-time counts by ending")
    acquisitions: int
    conflicts: int
    live_leases: int
    live_claims: int
    stalled_claims: int = Field(
        description="live claims that made no progress for their `stall_after` (recorded)"
    )
    windows: dict[str, Window] = Field(description='"1h" and "24h"')
    hottest_keys: list[HotKey] = Field(description="by conflicts in the last 24 h")
    expiring_holders: list[ExpiringHolder] = Field(description="by expiries in the last 24 h")
    hold_ms: HoldTimes


class Bucket(Out):
    start: int
    released: int
    expired: int
    force_released: int
    taken_over: int
    completed: int


class TimelineReply(Out):
    bucket_ms: int
    start: int
    end: int
    buckets: list[Bucket]


OPERATIONS = Family(tags=("operations",), problems=(401, 422))


def _events(services: Services, me: Principal, a: EventsIn) -> EventPage:
    """Events after the cursor `after`, oldest first; `next` is the cursor to go on from.

    One read examines a bounded stretch of the log: `next` moves past every event it examined,
    matched or not, so a filtered reader always advances (an empty page with a larger `next`
    means: ask again at once). With `wait_ms`, once the log is read to its end an empty answer
    waits (long-poll) until a matching event is recorded or the wait ends; each principal may
    hold a limited number of waits open (else `429`)."""
    return read_page(services.leases, a.after, filters_of(a), a.limit, services.limits.event_scan)


EVENTS = OPERATIONS.verb(
    "events", "GET /v1/events", EventsIn, _events, Reply(events_wire, _event_page, EventsReply),
    problems=(401, 413, 422),
)  # fmt: skip


def _stats(services: Services, me: Principal, a: NoArgs) -> dict[str, Any]:
    """Counts by ending, the expired share over 1 h and 24 h, contention, hold times."""
    return services.leases.stats()


STATS_REPLY = Reply(json_object, json_object, StatsReply)
STATS = OPERATIONS.verb("stats", "GET /v1/stats", NoArgs, _stats, STATS_REPLY, problems=(401,))


def _timeline(services: Services, me: Principal, a: TimelineIn) -> dict[str, Any]:
    """Lease endings per bucket, oldest first. At most 1440 buckets: a finer `bucket_ms` is
    widened, and the reply's `bucket_ms` is the one used."""
    return services.leases.timeline(a.span_ms, a.bucket_ms)


TIMELINE_REPLY = Reply(json_object, json_object, TimelineReply)
TIMELINE = OPERATIONS.verb(
    "timeline", "GET /v1/stats/timeline", TimelineIn, _timeline, TIMELINE_REPLY
)
