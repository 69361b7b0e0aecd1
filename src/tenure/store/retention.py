"""What the event log keeps, shared by both stores.

- Refusals are recorded in windows: the first refusal of a requester (the principal that
  asked) on a key writes a ``conflict`` event; the refusals of the same principal on the same
  key while the same lease holds it, in the :data:`CONFLICT_WINDOW_MS` that follow, add to that
  event's ``repeats`` (in its ``data``; absent means 1) instead of each writing one, whatever
  session each one named (a session is a free string: a window per session would let one
  principal write an event per name it makes up). A requester hammering a key writes one
  event a minute, not thousands.
- Retention by count drops only the kinds :data:`tenure.core.retention.KEPT_BY_COUNT` names;
  the rest (the security and ownership record) go by age only, once older than the audit
  window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tenure.core.models import EventDraft
from tenure.core.retention import KEPT_BY_COUNT, Pruned

CONFLICT_WINDOW_MS = 60_000
#: (the requester's session is not part of a refusal window: see above)
ANY_SESSION = ""


def coalesced(event: EventDraft) -> bool:
    """Whether ``event`` is a refusal that may add to an open window's event."""
    return event.type == "conflict" and event.key is not None and event.actor is not None


def window_params(event: EventDraft, now: int) -> dict[str, object]:
    """The parameters that find (or open) ``event``'s window."""
    return {
        "key": event.key,
        "actor": event.actor,
        "session": ANY_SESSION,
        "since": now - CONFLICT_WINDOW_MS,
        "holder": event.holder,
        "token": event.token,
        "at": now,
    }


def prune(
    cur: Any,
    q: Mapping[str, str],
    now: int,
    cuts: tuple[int, int, int],
    batch: int,
    texts: Callable[[Sequence[str]], Any],
) -> Pruned:
    """Fold the next batch over the count or past the age into the totals and delete it, but
    the events kept by age that are not past the audit window; delete the oldest of those once
    past it; close the refusal windows that ended. ``cuts``: ``(max_count, before,
    audit_before)``; ``texts`` turns a list of strings into the backend's query parameter. In
    the open write transaction of ``cur`` (sqlite3's connection or psycopg's cursor)."""
    max_count, before, audit_before = cuts
    pruned = int(_first(cur, q["pruned_upto"]))
    newest = int(_first(cur, q["max_event_id"]))
    window = {"pruned": pruned, "batch": batch, "audit_before": audit_before}
    deleted = int(cur.execute(q["delete_aged_endings"], window).rowcount)
    cur.execute(q["close_conflict_windows"], {"since": now - CONFLICT_WINDOW_MS})
    params = {**window, "before": before, "over_count": newest - max_count, "newest": newest}
    upto = _first(cur, q["prune_next_upto"], params)
    if upto is None:
        return Pruned(deleted)
    cur.execute(q["fold_range"], {**params, "upto": upto})
    by_count = {**params, "upto": upto, "by_count": texts(KEPT_BY_COUNT)}
    deleted += int(cur.execute(q["delete_range"], by_count).rowcount)
    cur.execute(q["set_pruned"], {"upto": upto})
    return Pruned(deleted, int(upto) - pruned)


def _first(cur: Any, sql: str, params: Mapping[str, Any] | None = None) -> Any:
    row = cur.execute(sql, params or {}).fetchone()
    return None if row is None else row[0]
