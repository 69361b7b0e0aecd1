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
