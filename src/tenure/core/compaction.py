"""Compaction: what retention keeps, by key prefix, and what one pass deleted.

A pass deletes, in small batches, what no guarantee needs any more:

- the lease rows of keys idle past the policy's ``lease_retention`` (their last lease ended,
  and its deadline passed, that long ago), never an item's claim; the largest token deleted
  is kept as a high-water mark, and a key without a row gets a token above it, so a key
  acquired again gets a larger token than any it ever had;
- the op_ids of fenced writes and of item writes older than the policy's ``op_window`` (a
  retry within the window is answered with the first result; past it, it is a new write);
- events past the retention (their counts folded into the all-time totals): the kinds kept by
  age (:mod:`tenure.core.retention`) once older than the audit window, the others once older
  than their age or beyond their count;
- dispatched agents whose tokens were revoked when their claim ended, a grace period later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from tenure.core.policy import DAY, HOUR, Policy, PolicySet
from tenure.core.retention import DEFAULT_AUDIT_AGE_MS

DEFAULT_EVENTS_MAX = 1_000_000
DEFAULT_EVENTS_AGE_MS = 30 * DAY
DEFAULT_AGENT_GRACE_MS = 24 * HOUR
#: the largest batch one transaction of a pass deletes, and the most batches of a kind a pass runs
MAX_BATCH = 10_000
MAX_BATCHES = 10_000


@dataclass(frozen=True)
class Retention:
    """What the event log and the principals keep (the leases' and op_ids' ages are the
    policy's, per key prefix): of the high-volume kinds, the newest ``events_max`` events and
    none older than ``events_age_ms``; the security and ownership record (the kinds kept by
    age, :mod:`tenure.core.retention`) for ``audit_age_ms`` (never less than
    ``events_age_ms``), however many events there are; a dispatched agent whose claim ended is
    retired ``agent_grace_ms`` after its tokens were revoked."""

    events_max: int = DEFAULT_EVENTS_MAX
    events_age_ms: int = DEFAULT_EVENTS_AGE_MS
    agent_grace_ms: int = DEFAULT_AGENT_GRACE_MS
    audit_age_ms: int = DEFAULT_AUDIT_AGE_MS


@dataclass(frozen=True)
class Scope:
    """The keys under ``prefix`` (``""``: every key) but those under ``skip``, which have
    scopes of their own, kept for ``age_ms``."""

    prefix: str
    skip: tuple[str, ...]
    age_ms: int


def scopes(policy: PolicySet, age: Callable[[Policy], int]) -> list[Scope]:
    """The scopes of a retention ``age`` (a field of :class:`Policy`): each key falls in exactly
    one, whose age is its policy's. An override whose age is its enclosing policy's needs no
    scope of its own (its keys stay in the enclosing one)."""
    own: dict[str, int] = {}
    for prefix, pol in policy.overrides:
        if age(pol) != age(_enclosing(policy, prefix)):
            own[prefix] = age(pol)
    found = [Scope("", tuple(sorted(own)), age(policy.default))]
    for prefix, ms in sorted(own.items()):
        under = tuple(sorted(p for p in own if p != prefix and p.startswith(prefix)))
        found.append(Scope(prefix, under, ms))
    return found


def _enclosing(policy: PolicySet, prefix: str) -> Policy:
    best: tuple[int, Policy] = (-1, policy.default)
    for other, pol in policy.overrides:
        if other != prefix and prefix.startswith(other) and len(other) > best[0]:
            best = (len(other), pol)
    return best[1]


def lease_retention(policy: Policy) -> int:
    return policy.lease_retention


def op_window(policy: Policy) -> int:
    return policy.op_window


@dataclass(frozen=True)
class CompactionResult:
    """What one pass deleted, by kind; ``retired_token``: the high-water mark of the tokens of
    deleted lease rows (every key without a row gets a larger token); ``complete``: nothing
    due was left behind (else the pass stopped at its batch budget: run another)."""

    leases: int = 0
    fenced_ops: int = 0
    item_ops: int = 0
    events: int = 0
    agents: int = 0
    retired_token: int = 0
    batches: int = 0
    complete: bool = True
    elapsed_ms: int = 0

    @property
    def deleted(self) -> int:
        """Rows deleted, every kind together."""
        return self.leases + self.fenced_ops + self.item_ops + self.events + self.agents

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_wire(cls, data: Any) -> CompactionResult:
        counts = {name: int(data[name]) for name in _COUNTS}
        return cls(**counts, complete=bool(data["complete"]))


_COUNTS = (
    "leases",
    "fenced_ops",
    "item_ops",
    "events",
    "agents",
    "retired_token",
    "batches",
    "elapsed_ms",
)
