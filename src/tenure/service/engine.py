"""What the lease verbs and the work queue share: one store, the policies, the metrics, the
commit that announces its events, and the rules both apply to any key (renewing, extending,
who may force a holder out).

:class:`~tenure.service.leases.Service` (the lease verbs) is an :class:`Engine`; the work queue
(:class:`~tenure.service.queue.WorkQueue`) runs on the service's engine, so neither module
imports the other's caller.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tenure.core import validate as v
from tenure.core.decide import Decision, decide_extend, decide_renew, may_force_release
from tenure.core.models import (
    ENDINGS,
    EventDraft,
    EventQuery,
    ExtendResult,
    KeyRecord,
    Lease,
    Principal,
)
from tenure.core.policy import Policy, PolicySet
from tenure.core.quotas import Quotas, minute_of, refuse_items, refuse_lease
from tenure.core.semaphores import SLOT_MARK, counted, semaphore_of
from tenure.errors import InvalidRequest, LeaseLost
from tenure.metrics import Metrics
from tenure.service.principals import ancestors
from tenure.store.base import KeyTx, Reach, Store

MAX_ANCESTRY = 64

Who = Principal | str
#: called (from the committing thread) with the events of every commit that appended some
Listener = Callable[[Sequence[EventDraft]], None]


def as_principal(who: Who) -> Principal:
    if isinstance(who, Principal):
        return who
    return Principal(v.check_text("principal", who, 256))


class _Deferred(threading.local):
    """Per thread: the events of an open :meth:`Engine.group`, announced at its commit."""

    events: builtins.list[EventDraft] | None = None


class Engine:
    """One :class:`Store` under a :class:`PolicySet`: transactions on a key, and what follows
    their commit (metrics, then :attr:`listeners`)."""

    def __init__(
        self, store: Store, policy: PolicySet | None = None, quotas: Quotas | None = None
    ) -> None:
        self.store = store
        self.policy = policy or PolicySet()
        #: the per-principal bounds (live leases, items per minute, live agents)
        self.quotas = quotas or Quotas()
        self.metrics = Metrics()
        #: called with the committed events after every commit that appended some
        self.listeners: builtins.list[Listener] = []
        self._deferred = _Deferred()

    def _run(
        self,
        key: str,
        decide: Callable[[KeyTx], Decision],
        *,
        create: bool = False,
        reach: Reach | None = None,
        extends: bool = False,
    ) -> Any:
        with self.store.key_tx(key, create=create, reach=reach, extends=extends) as tx:
            decision = decide(tx)
            if decision.record is not None:
                tx.save(decision.record)
            if decision.events:
                tx.append(decision.events)
            result = decision.result if SLOT_MARK in key and decision.error is None else None
            if result is not None:  # a semaphore's slot lease: its semaphore's number of slots
                row = tx.read("semaphore_slots", {"key": semaphore_of(key)[0]})  # type: ignore[index]
                result = counted(result, int(row[0]) if row else None)
        self.committed(decision.events)
        return decision.raise_or_result() if result is None else result

    @contextmanager
    def group(self) -> Iterator[None]:
        """Calls of this thread inside share one transaction (:meth:`Store.group`): each call
        decides on what the ones before it wrote, and what they appended is announced (metrics,
        listeners) once the group's commit is durable, not before."""
        if self._deferred.events is not None:  # nested: the outer group announces
            yield
            return
        with self.deferring() as deferred, self.store.group():
            yield
        self.committed(deferred)

    @contextmanager
    def deferring(self) -> Iterator[builtins.list[EventDraft]]:
        """The events that calls of this thread inside commit are collected in the list it
        gives, not announced: for a caller that commits them later (then: :meth:`committed`)."""
        deferred: builtins.list[EventDraft] = []
        self._deferred.events = deferred
        try:
            yield deferred
        finally:
            self._deferred.events = None

    def committed(self, events: Sequence[EventDraft]) -> None:
        """After a commit: count what ended and hand the events to the listeners."""
        if not events:
            return
        deferred = self._deferred.events
        if deferred is not None:  # inside group(): not durable yet
            deferred.extend(events)
            return
        self.metrics.observe_events(events)
        for listener in self.listeners:
            listener(events)

    def count_write(self, outcome: str) -> None:
        self.metrics.inc("tenure_fenced_writes_total", (("outcome", outcome),))

    # per-principal bounds (tenure.core.quotas): raised inside the transaction, which then
    # writes nothing ------------------------------------------------------------------------
    def _bound_lease(self, tx: KeyTx, granted: KeyRecord | None) -> None:
        """Refuse ``granted`` (the record a decision saves) if it is a new lease and its holder
        holds as many live ones as it may already; a renewal is not a new lease."""
        if granted is None or granted.ended is not None or granted.expires_at <= tx.now:
            return
        if tx.record is not None and tx.record.token == granted.token:
            return  # the same lease, renewed (or re-acquired by its session)
        limit = self.quotas.live_leases
        held = tx.live_leases(granted.holder, limit)
        if held >= limit:
            raise refuse_lease(granted.holder, granted.key, limit, held)

    def _bound_items(self, tx: KeyTx, creator: str, n: int) -> None:
        """Count ``n`` new items of ``creator`` in this minute, or refuse them all."""
        limit = self.quotas.items_per_minute
        added, count = tx.count_items(creator, minute_of(tx.now), n, limit)
        if not added:
            raise refuse_items(creator, limit, count, n, tx.now)

    # any key, item claims included ----------------------------------------------------------
    def _renew(self, who: Who, key: str, token: int, ttl_ms: int | None = None) -> Lease:
        """Renew the lease of ``token`` on ``key``."""
        me = as_principal(who)
        policy = self._policy(key)
        token = v.check_token(token)
        ttl = None if ttl_ms is None else v.check_ttl(ttl_ms, policy)
        try:
            lease: Lease = self._run(
                key,
                lambda tx: decide_renew(tx.record, key, me, token, ttl, tx.now),
                extends=True,
            )
        except LeaseLost as lost:
            raise self._explain(lost, key) from None
        self.metrics.inc("tenure_renewals_total")
        return lease

    def _extend(
        self, who: Who, key: str, token: int, until: int | None = None, by_ms: int | None = None
    ) -> ExtendResult:
        """Push the deadline to ``until`` or now + ``by_ms``, capped at now + ``max_lease``."""
        me = as_principal(who)
        policy = self._policy(key)
        token = v.check_token(token)
        if (until is None) == (by_ms is None):
            raise InvalidRequest("give exactly one of until and by_ms", key=key, field="until")
        if until is not None:
            until = v.check_instant("until", until)
        else:
            by_ms = v.check_positive("by_ms", by_ms)

        def decide(tx: KeyTx) -> Decision:
            wanted = until if until is not None else tx.now + (by_ms or 0)
            return decide_extend(tx.record, key, me, token, wanted, policy.max_lease, tx.now)

        try:
            result: ExtendResult = self._run(key, decide, extends=True)
        except LeaseLost as lost:
            raise self._explain(lost, key) from None
        return result

    def _may_force(self, actor: Principal, holder_name: str) -> bool:
        if actor.is_admin:
            return True
        holder = self.store.get_principal(holder_name)
        return may_force_release(actor, holder, self.ancestors(holder_name))

    def ancestors(self, name: str) -> tuple[str, ...]:
        """The principals that dispatched ``name``, nearest first."""
        return ancestors(self.store, name, MAX_ANCESTRY)

    def _check_key(self, key: str) -> str:
        self._policy(key)
        return key

    def _policy(self, key: str) -> Policy:
        """The policy of ``key``, once ``key`` is known to be a valid key under it."""
        policy = self.policy.for_key(key) if isinstance(key, str) else self.policy.default
        v.check_key(key, policy)
        return policy

    def _explain(self, lost: LeaseLost, key: str) -> LeaseLost:
        """Name how an older lease ended, from its ending event."""
        if lost.reason is not None or lost.token is None:
            return lost
        for ending in ENDINGS:
            query = EventQuery(key=key, token=lost.token, type=ending, limit=1)
            for event in self.store.events(query):
                return LeaseLost(
                    f"the lease with token {lost.token} on {key!r} was "
                    f"{event.type.replace('_', ' ')}",
                    key=key,
                    reason=event.type,
                    token=lost.token,
                )
        return LeaseLost(lost.detail, key=key, reason="expired", token=lost.token)
