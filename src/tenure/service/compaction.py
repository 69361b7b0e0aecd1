"""One compaction pass (:mod:`tenure.core.compaction`): admins, the server's schedule and the
trusted CLI on the database directly (``actor`` ``None``) run it.

Every deletion is a transaction of its own of at most ``batch`` rows, so a pass never holds a
lock for long and a crash in the middle loses nothing: what was deleted was due, and what was
not deleted yet is deleted by the next pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from tenure.core import validate as v
from tenure.core.compaction import (
    MAX_BATCH,
    MAX_BATCHES,
    CompactionResult,
    Retention,
    lease_retention,
    op_window,
    scopes,
)
from tenure.core.items import ITEM_PREFIX
from tenure.core.models import Principal
from tenure.core.policy import PolicySet
from tenure.core.retention import Pruned, audit_before
from tenure.errors import Forbidden, InvalidRequest
from tenure.store.base import Store


@dataclass(frozen=True)
class Ages:
    """Ages that override the policy's and the retention's for one pass (``None``: theirs).
    One age applies to every key prefix."""

    lease_ms: int | None = None
    op_ms: int | None = None
    events_ms: int | None = None
    agent_grace_ms: int | None = None
    audit_ms: int | None = None  # the kinds kept by age (never less than ``events_ms``)


@dataclass
class _Pass:
    """A pass under way: its batch, its budget per kind and what it deleted."""

    batch: int
    budget: int
    counts: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    complete: bool = True

    def drain(self, kind: str, step: Callable[[], int]) -> None:
        """Run ``step`` (one batch) until it deletes fewer than a batch or the kind's budget
        is spent."""
        for _ in range(self.budget):
            n = step()
            self.batches += 1
            self.counts[kind] = self.counts.get(kind, 0) + n
            if n < self.batch:
                return
        self.complete = False

    def drain_events(self, step: Callable[[], Pruned]) -> None:
        """Run ``step`` until it finds nothing due (a batch that held only events kept by age
        deletes nothing, and more may be due after it) or the budget is spent."""
        for _ in range(self.budget):
            done = step()
            self.batches += 1
            self.counts["events"] = self.counts.get("events", 0) + done.deleted
            if not done.due:
                return
        self.complete = False


#: a session's task (its first prompt's line) is forgotten after a day without a prompt
SESSION_TASK_MS = 24 * 3600 * 1000


def check_admin(actor: Principal | None) -> None:
    if actor is not None and not actor.is_admin:
        raise Forbidden(
            "only admins compact the database", actor=actor.name, reason="admin role required"
        )


def check_pass(batch: object, max_batches: object) -> tuple[int, int]:
    """``batch`` (1 to :data:`MAX_BATCH`) and ``max_batches`` (1 to :data:`MAX_BATCHES`)."""
    return (
        v.check_positive("batch", batch, MAX_BATCH),
        v.check_positive("max_batches", max_batches, MAX_BATCHES),
    )


def check_ages(ages: Ages) -> Ages:
    for name in ("lease_ms", "op_ms", "events_ms", "agent_grace_ms", "audit_ms"):
        value = getattr(ages, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise InvalidRequest(f"{name}: a whole number of milliseconds, 0 or more", field=name)
    return ages


def compact(
    store: Store,
    policy: PolicySet,
    retention: Retention,
    actor: Principal | None,
    batch: object = 1000,
    max_batches: object = 100,
    ages: Ages | None = None,
) -> CompactionResult:
    """One pass: lease rows, fenced op_ids, item op_ids, events, retired agents, each in
    batches of ``batch`` rows, at most ``max_batches`` batches of each kind (``complete`` says
    whether anything due was left for the next pass)."""
    check_admin(actor)
    size, budget = check_pass(batch, max_batches)
    ages = check_ages(ages or Ages())
    started = time.monotonic()
    now = store.now_ms()
    run = _Pass(size, budget)
    for scope in scopes(policy, lease_retention):
        before = now - (scope.age_ms if ages.lease_ms is None else ages.lease_ms)
        run.drain("leases", partial(store.compact_leases, scope, before, size))
    for scope in scopes(policy, op_window):
        before = now - (scope.age_ms if ages.op_ms is None else ages.op_ms)
        run.drain("fenced_ops", partial(store.compact_fenced_ops, scope, before, size))
    item_window = policy.for_key(ITEM_PREFIX).op_window if ages.op_ms is None else ages.op_ms
    run.drain("item_ops", partial(store.compact_item_ops, now - item_window, size))
    events_age = retention.events_age_ms if ages.events_ms is None else ages.events_ms
    audit_age = retention.audit_age_ms if ages.audit_ms is None else ages.audit_ms
    cuts = (now - events_age, audit_before(now, events_age, audit_age))
    run.drain_events(partial(store.prune_events, retention.events_max, *cuts, size))
    grace = retention.agent_grace_ms if ages.agent_grace_ms is None else ages.agent_grace_ms
    run.drain("agents", partial(store.retire_agents, now - grace, size))
    run.drain("session_tasks", partial(store.forget_session_tasks, now - SESSION_TASK_MS, size))
    return CompactionResult(
        leases=run.counts.get("leases", 0),
        fenced_ops=run.counts.get("fenced_ops", 0),
        item_ops=run.counts.get("item_ops", 0),
        events=run.counts.get("events", 0),
        agents=run.counts.get("agents", 0),
        retired_token=store.retired_token(),
        batches=run.batches,
        complete=run.complete,
        elapsed_ms=int((time.monotonic() - started) * 1000),
    )
