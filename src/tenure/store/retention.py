"""What the event log keeps, shared by both stores.

- Refusals are recorded in windows: the first refusal of a requester (the actor and the
  session it asked for) on a key writes a ``conflict`` event; the refusals of the same requester
  on the same key while the same lease holds it, in the :data:`CONFLICT_WINDOW_MS` that follow,
  add to that event's ``repeats`` (in its ``data``; absent means 1) instead of each writing one.
  A requester hammering a key writes one event a minute, not thousands.
- Retention by count drops only events that are not :data:`ENDINGS`; the endings (who lost or
  gave up what, and who took it) are dropped by age only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tenure.core.models import EventDraft

CONFLICT_WINDOW_MS = 60_000
#: the events retention by count never drops (only retention by age does)
ENDINGS = (
    "released",
    "expired",
    "force_released",
    "taken_over",
    "reassigned",
    "completed",
    "cancelled",
)


def coalesced(event: EventDraft) -> bool:
    """Whether ``event`` is a refusal that may add to an open window's event."""
    return event.type == "conflict" and event.key is not None and event.actor is not None


def window_params(event: EventDraft, now: int) -> dict[str, object]:
    """The parameters that find (or open) ``event``'s window."""
    session = event.data.get("wanted_session") if event.data else None
    return {
        "key": event.key,
        "actor": event.actor,
        "session": session if isinstance(session, str) else "",
        "since": now - CONFLICT_WINDOW_MS,
        "holder": event.holder,
        "token": event.token,
        "at": now,
    }


def prune(cur: Any, q: Mapping[str, str], now: int, max_count: int, before: int, batch: int) -> int:
    """Fold the next batch over the count or past the age into the totals and delete it, but
    the endings not past the age (retention by count keeps those); delete the oldest endings
    past the age; close the refusal windows that ended. In the open write transaction of
    ``cur`` (sqlite3's connection or psycopg's cursor); the number of events deleted."""
    pruned = int(_first(cur, q["pruned_upto"]))
    newest = int(_first(cur, q["max_event_id"]))
    window = {"pruned": pruned, "batch": batch, "before": before}
    params = {**window, "over_count": newest - max_count}
    deleted = int(cur.execute(q["delete_aged_endings"], window).rowcount)
    cur.execute(q["close_conflict_windows"], {"since": now - CONFLICT_WINDOW_MS})
    upto = _first(cur, q["prune_next_upto"], params)
    if upto is None:
        return deleted
    cur.execute(q["fold_range"], {**params, "upto": upto})
    deleted += int(cur.execute(q["delete_range"], {**params, "upto": upto}).rowcount)
    cur.execute(q["set_pruned"], {"upto": upto})
    return deleted


def _first(cur: Any, sql: str, params: Mapping[str, Any] | None = None) -> Any:
    row = cur.execute(sql, params or {}).fetchone()
    return None if row is None else row[0]
