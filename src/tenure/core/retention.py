"""How long the event log keeps each kind of event: the one table that decides it.

Two classes:

- ``"age"``: the security and ownership record (principals, tokens, roles, the token floor,
  who acquired, claimed, lost, gave up or took over what, dispatches, reassignments, the
  items' own history). Kept by age only, for the audit window (``TENURE_AUDIT_MAX_AGE_MS``,
  never shorter than the other events' age): however many events anyone else makes, none of
  these goes before its time.
- ``"count"``: the high-volume kinds a holder makes as it works (refusals, which are
  coalesced per requester and key, extensions, progress reports, fenced writes). Kept by age
  (``TENURE_EVENTS_MAX_AGE_MS``) and by count (``TENURE_EVENTS_MAX``).

``acquired`` and ``claimed`` are kept by age: an ending without the acquisition it ends does
not say who held the key from when. ``progress`` is kept by count: a worker reports it as
often as it likes, and the claim it belongs to is recorded by ``claimed`` and its ending.
A kind not in the table is kept by age (keeping too much is the safe mistake), and a unit test
fails for any kind the code records that is not in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Class = Literal["age", "count"]

DAY_MS = 86_400_000
#: the audit window: how long the events kept by age stay (``TENURE_AUDIT_MAX_AGE_MS``)
DEFAULT_AUDIT_AGE_MS = 90 * DAY_MS

#: every kind of event and how it is kept
EVENT_RETENTION: dict[str, Class] = {
    # principals, tokens, roles, the token floor
    "principal_created": "age",
    "principal_roles_set": "age",
    "principal_removed": "age",
    "token_issued": "age",
    "token_revoked": "age",
    "token_floor_set": "age",
    # leases: who held what, and how it ended
    "acquired": "age",
    "released": "age",
    "expired": "age",
    "force_released": "age",
    "taken_over": "age",
    "transferred": "age",
    # a file changed (by a shell command, a tool tenure does not lease) while another held it
    "unleased_edit": "age",
    # items: who claimed, dispatched, moved, finished what
    "item_created": "age",
    "item_edited": "age",
    "item_status": "age",
    "claimed": "age",
    "released_item": "age",
    "dispatched": "age",
    "reassigned": "age",
    "stalled": "age",
    "completed": "age",
    "cancelled": "age",
    "parked": "age",
    "reopened": "age",
    # high volume: what a holder does as it works, and refusals
    "conflict": "count",
    "renewed": "count",  # (a renewal records no event today; if it ever does, it is this)
    "extended": "count",
    "progress": "count",
    "written": "count",
}

#: the kinds retention by count never drops
KEPT_BY_AGE: tuple[str, ...] = tuple(sorted(k for k, c in EVENT_RETENTION.items() if c == "age"))
#: the kinds retention by count may drop
KEPT_BY_COUNT: tuple[str, ...] = tuple(
    sorted(k for k, c in EVENT_RETENTION.items() if c == "count")
)


def retention_of(kind: str) -> Class:
    """How events of ``kind`` are kept (an unknown kind: by age)."""
    return EVENT_RETENTION.get(kind, "age")


def audit_before(now: int, events_age_ms: int, audit_age_ms: int) -> int:
    """The instant before which the events kept by age go: ``audit_age_ms`` ago, but never
    later than the other events' cut (``events_age_ms`` ago)."""
    return now - max(audit_age_ms, events_age_ms)


@dataclass(frozen=True)
class Pruned:
    """One step of pruning: ``deleted`` events, and ``folded``, how far the mark of the events
    folded into the all-time totals moved (in event ids; those kept by age stay in the log,
    folded, until the audit window ends). Nothing of either: nothing was due."""

    deleted: int = 0
    folded: int = 0

    @property
    def due(self) -> bool:
        """Whether this step found work (so the next one may find more)."""
        return self.deleted > 0 or self.folded > 0
