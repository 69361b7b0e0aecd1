"""Reading the event log from its end: where it ends now (``head``), the latest events that
match a filter, the events since a moment. The API reads the log forwards from a cursor, one
bounded stretch per request (the reply's ``next`` moves past every id examined, matched or
not); these helpers walk stretches back from the end, a bounded number of requests."""

from __future__ import annotations

from collections.abc import Callable

from tenure.client import Client
from tenure.client import _wire as sh
from tenure.core.models import Event
from tenure.verbs.ops import Filters

PAGE = 1000  # events per request
#: a type no event has: a read filtered by it finds nothing, and its ``next`` shows how far the
#: server looked (the end of the log, or the end of one stretch of it)
NO_TYPE = "tenure-cli:none"
MAX_REQUESTS = 200


def page(client: Client, after: int, f: Filters, limit: int = PAGE) -> tuple[list[Event], int]:
    """One read after ``after``: the events found and the cursor to go on from."""
    where = Filters(key=f.key, item=f.item, holder=f.holder, type=f.type)
    call = sh.events(after, where, limit)

    def parse(data: object) -> tuple[list[Event], int]:
        found = sh.events_reply(data)
        cursor = data.get("next") if isinstance(data, dict) else None
        return found, int(cursor) if cursor is not None else (found[-1].id if found else after)

    return client._call(sh.Call(call.op, call.method, call.path, parse, params=call.params))


def head(client: Client) -> int:
    """The id of the newest event (0 if there is none)."""
    cursor = 0
    for _ in range(MAX_REQUESTS):
        _, upto = page(client, cursor, Filters(type=NO_TYPE), 1)
        if upto <= cursor:
            return cursor
        cursor = upto
    return cursor


def read(client: Client, after: int, upto: int, f: Filters) -> list[Event]:
    """The events in ``(after, upto]`` that match ``f``, oldest first."""
    out: list[Event] = []
    cursor = after
    for _ in range(MAX_REQUESTS):
        if cursor >= upto:
            break
        found, nxt = page(client, cursor, f)
        out += [e for e in found if e.id <= upto]
        if nxt <= cursor:
            break
        cursor = nxt
    return out


def latest(
    client: Client,
    count: int,
    f: Filters,
    enough: Callable[[list[Event]], bool] | None = None,
    within: int | None = None,
) -> tuple[list[Event], int]:
    """The newest ``count`` events that match ``f`` (oldest first), and the head of the log.
    Walks back in doubling stretches until it has ``count`` (or ``enough`` of what it found
    says to stop: it is given the events found so far, oldest first), looking at no more than
    the last ``within`` event ids if given."""
    end = head(client)
    floor = 0 if within is None else max(0, end - within)
    found: list[Event] = []
    stop, span = end, PAGE
    while stop > floor and len(found) < count and not (enough and found and enough(found)):
        start = max(floor, stop - span)
        found = read(client, start, stop, f) + found
        stop, span = start, span * 2
    return found[-count:], end
