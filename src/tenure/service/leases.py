"""The in-process service: every front (HTTP, CLI, MCP, dashboard) calls this.

The caller's identity is an argument here; the server takes it from authentication.
Each write is one short transaction on the key: lock, read the instant, decide (pure), save.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Unpack

from tenure.core import validate as v
from tenure.core.compaction import CompactionResult, Retention
from tenure.core.decide import (
    WAITER_GONE,
    Decision,
    decide_acquire,
    decide_force_release,
    decide_release,
    decide_transfer,
    decide_write,
    releases_of,
)
from tenure.core.items import ITEM_PREFIX
from tenure.core.models import (
    Event,
    EventDraft,
    EventQuery,
    EventWhere,
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    Lease,
    LeaseQuery,
    LostLease,
    Principal,
    ReleaseAllResult,
    ReleaseResult,
    RenewAllResult,
    event_where,
)
from tenure.core.policy import Policy, PolicySet
from tenure.core.quotas import Quotas
from tenure.core.retention import audit_before
from tenure.core.semaphores import SLOT_MARK, check_plain_key, check_room, check_slots
from tenure.core.subtree_tokens import prefixes_above
from tenure.errors import InvalidRequest, NotFound, StaleToken, TenureError
from tenure.service.compaction import Ages, compact
from tenure.service.engine import Engine, Who, as_principal
from tenure.service.queue import WorkQueue
from tenure.service.semaphores import (
    acquire_slot,
    counted_json,
    counted_leases,
    transfer_floor,
)
from tenure.service.stats import StatsView
from tenure.service.token_floors import floor_for
from tenure.store.base import KeyTx, Reach, Store

__all__ = ["ITEM_VERBS", "Service", "Who", "as_principal"]

#: live leases read at a time by release_all
RELEASE_PAGE = 1000
#: the batches one prune_events call folds at most while they hold only events kept by age
MAX_FOLDS = 100
#: what to use instead of a generic lease verb on an item's key (``{id}``: the item)
ITEM_VERBS = {
    "acquire": "claim the item (POST /v1/items/{id}/claim; tenure claim {id})",
    "renew": "renew the claim (POST /v1/items/{id}/renew; tenure renew {id})",
    "extend": "extend the claim (POST /v1/items/{id}/extend; tenure extend {id})",
    "release": "release the claim (POST /v1/items/{id}/release; tenure release {id})",
    "force_release": (
        "force-release the claim (POST /v1/items/{id}/force-release; "
        "tenure force-release {id} --reason)"
    ),
    "transfer": (
        "release the claim (POST /v1/items/{id}/release; tenure release {id}) and claim it "
        "from the other session"
    ),
    "write": (
        "report progress or complete the item (POST /v1/items/{id}/progress or "
        "/v1/items/{id}/complete; tenure complete {id})"
    ),
}


class Service(Engine):
    """Leases, the fenced register and the event log over one :class:`Store`; its work queue
    is :attr:`items`."""

    def __init__(
        self,
        store: Store,
        policy: PolicySet | None = None,
        *,
        stall_ms: int | None = None,
        retention: Retention | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        """``stall_ms``: a live claim without progress for this long is ``stalled``, whatever
        the policy's ``stall_after`` says (which is 10 minutes unless set); ``retention``: what
        :meth:`compact` keeps of the event log and of dispatched agents; ``quotas``: the
        per-principal bounds (:mod:`tenure.core.quotas`)."""
        super().__init__(store, policy, quotas)
        self.retention = retention or Retention()
        self.stats_view = StatsView(store)
        self.items = WorkQueue(self, stall_ms)

    # leases ---------------------------------------------------------------------------------
    def acquire(
        self,
        who: Who,
        key: str,
        ttl_ms: int | None = None,
        task: str | None = None,
        meta: dict[str, Any] | None = None,
        session: str | None = None,
        scope: str | None = "key",
        slots: int | None = None,
    ) -> Lease:
        """Grant ``key`` to ``who``'s ``session`` (``None``: the default session ``""``), or
        renew it if that same session holds it already (same token). Another session of
        ``who`` holding it is refused like anyone else (``LeaseHeld``).

        ``scope="subtree"`` (on a key ending in ``/``) grants every key under it too: it is
        refused while anyone else holds a key under it or a subtree above it, and while it
        lives nobody else gets a key under it (:mod:`tenure.core.subtree`).

        ``slots``: ``key`` is a semaphore of that many slots, held by as many leases at once,
        each on a slot key of its own (:mod:`tenure.core.semaphores`)."""
        me = as_principal(who)
        policy = self._lease_policy(key, "acquire")
        ttl = v.check_ttl(ttl_ms, policy)
        task = v.check_task(task)
        meta = v.check_meta(meta, policy)
        sid = v.check_session(session)
        wide = v.check_scope(scope, key)
        if SLOT_MARK in key:
            check_plain_key(key)  # a slot's lease comes through its semaphore only
        if slots is not None:
            if wide != "key":
                raise InvalidRequest("scope: a semaphore holds its key only", field="scope")
            n = check_slots(slots)
            check_room(key, n, policy.max_key_bytes)
            return acquire_slot(self, me, key, n, (ttl, task, meta, sid))

        def decide(tx: KeyTx) -> Decision:
            floor = floor_for(tx, wide)
            decision = decide_acquire(
                tx.record, key, me, ttl, task, meta, tx.now, sid, floor, wide, tx.nearby()
            )
            if decision.error is None:
                self._bound_lease(tx, decision.record)
                if wide == "subtree" and decision.record is not None:  # orders the keys under
                    tx.save_subtree_token(key, decision.record.token)
            return decision

        lease: Lease = self._run(key, decide, create=True, reach=Reach(wide, me.name, sid))
        return lease

    def renew(self, who: Who, key: str, token: int, ttl_ms: int | None = None) -> Lease:
        self._lease_policy(key, "renew")
        return self._renew(who, key, token, ttl_ms)

    def renew_all(
        self, who: Who, keys: Iterable[str] | None = None, session: str | None = None
    ) -> RenewAllResult:
        """Renew every live lease of ``who``'s ``session`` (``None``: the default session
        ``""``), each with its own ttl; or those in ``keys`` (of any session of ``who``, or of
        ``session`` only when given).

        One transaction renews every lease that is live. Without ``keys``, ``lost`` lists the
        session's leases that lapsed lately (:meth:`_lapsed`); with ``keys``, the keys it did
        not renew are looked at one by one, to name why each one is lost."""
        me = as_principal(who)
        sid = _session_of(session, keys is None)
        wanted = None
        if keys is not None:
            wanted = list(dict.fromkeys(self._check_key(k) for k in _as_list(keys, "keys")))
        now, records = self.store.renew_all(me.name, sid, wanted)
        if records:
            self.metrics.inc("tenure_renewals_total", by=len(records))
        by_key = {x.key: x for x in counted_leases(self.store, [r.lease(now) for r in records])}
        if wanted is None:
            renewed_all = tuple(by_key[k] for k in sorted(by_key))
            return RenewAllResult(renewed_all, self._lapsed(me, sid or ""))
        renewed, lost = [], []
        for key in wanted:
            if key in by_key:
                renewed.append(by_key[key])
                continue
            rec = self.store.get(key)
            if rec is None or rec.holder != me.name or sid not in (None, rec.session):
                lost.append(LostLease(key, "not_held"))
                continue
            try:
                renewed.append(self._renew(me, key, rec.token))
            except TenureError as err:
                reason = str(getattr(err, "reason", None) or err.code)
                lost.append(LostLease(key, reason, rec.token))
        return RenewAllResult(tuple(renewed), tuple(lost))

    def renew_all_json(self, who: Who, session: str | None = None) -> bytes:
        """``renew_all(who, session=session)`` (no ``keys``) as the JSON of its reply,
        ``{"renewed": [...], "lost": [...]}``: equal, once parsed, to its ``to_dict()``. The
        database writes the array of renewed leases, so no lease becomes a Python object (a
        heartbeat over 100,000 leases: a 22 MB reply)."""
        me = as_principal(who)
        sid = v.check_session(session)
        _, parts, count = self.store.renew_all_json(me.name, sid)
        leases = counted_json(self.store, parts)
        if count:
            self.metrics.inc("tenure_renewals_total", by=count)
        lost = json.dumps([x.to_dict() for x in self._lapsed(me, sid)], separators=(",", ":"))
        return b"".join([b'{"renewed":[', *leases, b'],"lost":', lost.encode(), b"}"])

    def _lapsed(self, me: Principal, session: str) -> tuple[LostLease, ...]:
        """The leases of ``me``'s ``session`` that expired or were force-released and whose
        deadline is at most the longest ``max_ttl`` of the policy ago (a heartbeat that missed
        beats still hears of them; one taken by someone else since is not listed)."""
        policies = (self.policy.default, *(p for _, p in self.policy.overrides))
        window = max(p.max_ttl for p in policies)
        return tuple(self.store.lapsed(me.name, session, window)[1])

    def extend(
        self, who: Who, key: str, token: int, until: int | None = None, by_ms: int | None = None
    ) -> ExtendResult:
        """Push the deadline to ``until`` or now + ``by_ms``, capped at now + ``max_lease``."""
        self._lease_policy(key, "extend")
        return self._extend(who, key, token, until, by_ms)

    def release(
        self, who: Who, key: str, token: int | None = None, session: str | None = None
    ) -> ReleaseResult:
        """End your lease on ``key``. Releasing what you do not hold says ``released: False``.

        With ``token``, the lease of that token (from any session of yours); without, the lease
        of your ``session`` (``None``: the default session)."""
        me = as_principal(who)
        self._lease_policy(key, "release")
        token = v.check_optional_token(token)
        sid = v.check_session(session)
        result: ReleaseResult = self._run(
            key, lambda tx: decide_release(tx.record, key, me, token, tx.now, sid)
        )
        return result

    def withdraw(self, who: Who, key: str, token: int) -> ReleaseResult:
        """End lease ``token`` on ``key``, granted to a waiting acquisition of ``who`` whose
        client had gone before the reply reached it: a ``released`` event with reason
        ``waiter_gone``, so the next waiter gets the key at once."""
        me = as_principal(who)
        token = v.check_token(token)
        result: ReleaseResult = self._run(
            key, lambda tx: decide_release(tx.record, key, me, token, tx.now, reason=WAITER_GONE)
        )
        return result

    def release_all(self, who: Who, session: str | None = None) -> ReleaseAllResult:
        """End every live lease of ``who`` (only ``session``'s when given), item claims
        excepted: each by its own token, in its own transaction, as :meth:`release` would.
        A lease that ends meanwhile (expired, taken over) is left out of the result."""
        me = as_principal(who)
        sid = None if session is None else v.check_session(session)
        now, held, after = self.store.now_ms(), [], None
        mine = LeaseQuery(holder=me.name, limit=RELEASE_PAGE)
        while page := self.store.live(now, replace(mine, after=after)):
            held += releases_of([r.lease(now) for r in page], me, sid)
            after = page[-1].key
        released = []
        for key, token in held:
            result = self.release(me, key, token)
            if result.released and result.lease is not None:
                released.append(result.lease)
        return ReleaseAllResult(tuple(released))

    def transfer(self, who: Who, key: str, token: int, to_session: str) -> Lease:
        """Hand ``who``'s live lease ``token`` on ``key`` (held by any session of ``who``) to
        ``who``'s session ``to_session``, under a new token (:func:`decide_transfer`): the
        lease as it is now, recorded as a ``transferred`` event."""
        me = as_principal(who)
        self._lease_policy(key, "transfer")
        token = v.check_token(token)
        to = v.check_session(to_session, "to_session")

        def decide(tx: KeyTx) -> Decision:
            floor = floor_for(tx, fresh=True)
            decision = decide_transfer(tx.record, key, me, token, to, tx.now, floor, tx.nearby())
            if decision.error is None and SLOT_MARK in key:  # a slot: the semaphore's next token
                floor = transfer_floor(tx, floor)
                decision = decide_transfer(
                    tx.record, key, me, token, to, tx.now, floor, tx.nearby()
                )
            return decision

        lease: Lease = self._run(key, decide, reach=Reach("key", me.name, to))
        return lease

    def force_release(self, who: Who, key: str, reason: str) -> ForceReleaseResult:
        """End someone's live lease as an authority; its token is dead for fenced writes."""
        actor = as_principal(who)
        self._lease_policy(key, "force_release")
        reason = v.check_text("reason", reason, v.MAX_REASON_CHARS)

        def decide(tx: KeyTx) -> Decision:
            rec = tx.record
            allowed = rec is not None and self._may_force(actor, rec.holder)
            return decide_force_release(rec, key, actor, reason, allowed, tx.now)

        result: ForceReleaseResult = self._run(key, decide)
        return result

    def get(self, key: str) -> Lease:
        """The latest lease on ``key`` with its ``state`` (``live``, ``expired``, …)."""
        rec = self.store.get(self._check_key(key))
        if rec is None:
            raise NotFound(f"no lease was ever granted on {key!r}", key=key, what="lease")
        return counted_leases(self.store, [rec.lease(self.store.now_ms())])[0]

    def list(
        self,
        prefix: str | None = None,
        holder: str | None = None,
        task: str | None = None,
        limit: int | None = None,
        after: str | None = None,
        state: str = "live",
    ) -> list[Lease]:
        """Live leases, by key; ``after``: the keys sorting after this one (the next page).
        ``state``: ``expired``, ``released`` or ``all`` lists the latest lease of each key that
        ended that way (``all``: whatever its state), each with its ``state``."""
        for name, value in (("prefix", prefix), ("holder", holder), ("task", task)):
            if value is not None:
                v.check_text(name, value, 1024, required=False)
        if after is not None:
            v.check_text("after", after, 1024)
        if limit is not None:
            limit = v.check_positive("limit", limit, 100_000)
        now = self.store.now_ms()
        query = LeaseQuery(prefix, holder, task, limit, after, v.check_lease_state(state))
        return counted_leases(self.store, [r.lease(now) for r in self.store.live(now, query)])

    def contention(self, key: str) -> int:
        """How many acquisitions of ``key`` were refused because someone held it."""
        self._check_key(key)
        rec = self.store.get(key)
        return rec.conflicts if rec else 0

    # fenced register ------------------------------------------------------------------------
    def write(
        self, who: Who, key: str, token: int, value: Any, op_id: str | None = None
    ) -> FencedWrite:
        """Store ``value`` under ``key`` if ``token`` is the key's current token and ``who``
        holds it. ``op_id`` names one intended write under ``token``: repeating it answers the
        first result; the same ``op_id`` under a newer token is a new write."""
        me = as_principal(who)
        policy = self._lease_policy(key, "write")
        token = v.check_token(token)
        v.check_value(value, policy)
        if op_id is not None:
            op_id = v.check_text("op_id", op_id, v.MAX_OP_ID_CHARS)
        above = prefixes_above(key)

        def decide(tx: KeyTx) -> Decision:
            duplicate = tx.find_op(token, op_id) if op_id is not None else None
            decision = decide_write(
                tx.record,
                None if duplicate else tx.register(),
                duplicate,
                key,
                me,
                token,
                value,
                tx.now,
                op_id,
                tx.grant_above(above) if above else None,
            )
            if isinstance(decision.result, FencedWrite) and not decision.result.duplicate:
                tx.save_register(decision.result, op_id)
            return decision

        try:
            result: FencedWrite = self._run(key, decide)
        except StaleToken:
            self.count_write("stale")
            raise
        self.count_write("duplicate" if result.duplicate else "accepted")
        return result

    def read(self, key: str) -> FencedValue:
        value = self.store.read_register(self._check_key(key))
        if value is None:
            raise NotFound(f"nothing was written to {key!r}", key=key, what="fenced value")
        return value

    # events and upkeep ----------------------------------------------------------------------
    def events(
        self, after: int = 0, *, upto: int | None = None, **where: Unpack[EventWhere]
    ) -> builtins.list[Event]:
        """Events after the cursor ``after``, oldest first, that match ``where``
        (:class:`~tenure.core.models.EventWhere`); ``upto``: only ids up to it (a bounded window
        of the log). Never past the store's :meth:`~tenure.store.base.Store.last_event_id`, read
        first: a cursor moved to the last event returned never passes one that commits later."""
        w = event_where(dict(where))
        key, holder, type, item = w.get("key"), w.get("holder"), w.get("type"), w.get("item")
        limit = w.get("limit", 100)
        if upto is None:
            upto = self.store.last_event_id()
        query = EventQuery(
            after=v.check_cursor(after),
            key=None if key is None else self._check_key(key),
            holder=None if holder is None else v.check_text("holder", holder, 256),
            type=None if type is None else v.check_text("type", type, 64),
            limit=v.check_limit(limit),
            upto=upto,
        )
        if item is not None:
            item_key = ITEM_PREFIX + v.check_text("item", item, 256)
            if query.key is not None and query.key != item_key:
                return []  # both filters apply: no event is of two keys
            query = replace(query, key=item_key)
        return self.store.events(query)

    def reap(self, limit: int = 1000) -> builtins.list[Event]:
        """Record ``expired`` for lapsed leases nobody recorded yet (exactly once)."""
        reaped = self.store.reap(v.check_limit(limit))
        self.committed([_draft(e) for e in reaped])
        return reaped

    def revoke_ended_agents(self, limit: int = 1000) -> builtins.list[Event]:
        """End the tokens of dispatched agents whose claim ended, however it ended (the
        reaper's job: a ``kill -9``ed supervisor leaves nothing to clean up)."""
        revoked = self.store.revoke_ended_agents(v.check_limit(limit))
        self.committed([_draft(e) for e in revoked])
        return revoked

    def prune_events(
        self, max_count: int, max_age_ms: int, batch: int = 1000, audit_age_ms: int | None = None
    ) -> int:
        """Retention: drop one batch of the oldest events beyond ``max_count`` or older than
        ``max_age_ms`` (their counts are kept in the all-time totals), but those of the kinds
        kept by age (:mod:`tenure.core.retention`), which go once older than ``audit_age_ms``
        (default: the retention's; never less than ``max_age_ms``). Batches holding nothing
        but those are folded and passed over, each in a transaction of its own (at most
        :data:`MAX_FOLDS` a call); the number dropped."""
        audit = self.retention.audit_age_ms if audit_age_ms is None else audit_age_ms
        for _ in range(MAX_FOLDS):
            now = self.store.now_ms()
            step = self.store.prune_events(
                max_count, now - max_age_ms, audit_before(now, max_age_ms, audit), batch
            )
            if step.deleted or not step.due:
                return step.deleted
        return 0

    def compact(
        self,
        batch: int = 1000,
        max_batches: int = 100,
        *,
        actor: Who | None = None,
        ages: Ages | None = None,
    ) -> CompactionResult:
        """One compaction pass (:mod:`tenure.service.compaction`) in transactions of at most
        ``batch`` rows, at most ``max_batches`` of each kind; ``actor`` (``None``: the server or
        the CLI on the database) must be an admin; ``ages`` override the retention's."""
        me = None if actor is None else as_principal(actor)
        given = ages or Ages()
        return compact(self.store, self.policy, self.retention, me, batch, max_batches, given)

    def stats(self) -> dict[str, Any]:
        """Counts by ending, expired share over 1 h and 24 h, contention, hold times."""
        return self.stats_view.stats()

    def timeline(self, span_ms: int = 3_600_000, bucket_ms: int = 60_000) -> dict[str, Any]:
        """Lease endings per bucket of ``bucket_ms`` over the last ``span_ms``."""
        return self.stats_view.timeline(span_ms, bucket_ms)

    # helpers --------------------------------------------------------------------------------
    def _lease_policy(self, key: str, verb: str) -> Policy:
        """The policy of ``key`` for a generic lease verb, which refuses the keys of items."""
        policy = self._policy(key)
        if key.startswith(ITEM_PREFIX):
            item = key[len(ITEM_PREFIX) :]
            raise InvalidRequest(
                f"key: {key!r} is the claim of item {item!r}, and item keys belong to items: "
                + ITEM_VERBS[verb].replace("{id}", item or "ID"),
                key=key,
                field="key",
            )
        return policy


def _draft(e: Event) -> EventDraft:
    return EventDraft(e.type, e.key, e.holder, e.task, e.token, e.actor, e.reason, e.data)


def _session_of(session: str | None, whole: bool) -> str | None:
    """The session a renew-all renews: without keys (``whole``) ``session`` or the default
    ``""``, never every session's; with keys, ``None`` (any of the caller's) unless given."""
    if session is None and not whole:
        return None
    return v.check_session(session)


def _as_list(values: Iterable[str], field: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidRequest(f"{field} must be a list of strings", field=field)
    return list(values)
