"""The shared work queue over the lease engine: items, claims, fenced progress and completion.

``Service.items`` is a :class:`WorkQueue`, running on the service's
:class:`~tenure.service.engine.Engine` (its transactions, metrics and listeners). Each verb on
an item is one short transaction on the key ``items/<id>``: the lease row is locked, the item row
is read and written in the same transaction, and the pure decisions of :mod:`tenure.core.items`
say what changes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tenure.core import validate as v
from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.decide import Decision, decide_force_release
from tenure.core.items import (
    CLOSED,
    Item,
    ItemDecision,
    ItemView,
    ReleaseCause,
    Transfer,
    check_epoch,
    decide_cancel,
    decide_claim,
    decide_complete,
    decide_item_release,
    decide_progress,
    decide_reassign,
    decide_stall,
    dispatched,
    edit_events,
    item_key,
    lease_state,
    not_assignee,
    refused_dispatch,
)
from tenure.core.models import ExtendResult, ForceReleaseResult, KeyRecord, Lease, Principal
from tenure.core.parking import after_release
from tenure.core.policy import Policy
from tenure.core.quotas import refuse_agent
from tenure.core.work import PARKED, parked_error
from tenure.errors import Conflict, Forbidden, InvalidRequest, NotFound, StaleToken
from tenure.service.engine import Engine, Who
from tenure.service.principals import NAME_RE, check_principal, hash_token, new_token
from tenure.service.queue_items import (
    MAX_BODY_CHARS,
    MAX_LABELS,
    MAX_TITLE_CHARS,
    ItemDraft,
    check_labels,
    check_priority,
    created_event,
    follow_up_drafts,
)
from tenure.service.queue_parking import QueueParking
from tenure.service.queue_views import check_item_id
from tenure.service.token_floors import floor_for
from tenure.store.base import KeyTx
from tenure.store.values import NewToken

__all__ = [  # the results live in tenure.core.claims; imported from here by older code
    "MAX_BODY_CHARS",
    "MAX_LABELS",
    "MAX_TITLE_CHARS",
    "Briefing",
    "Claim",
    "Completion",
    "Dispatch",
    "ItemRelease",
    "ReadyView",
    "WorkQueue",
    "check_item_id",
    "check_labels",
    "check_priority",
]

DEFAULT_STALL_MS = Policy().stall_after


def agent_name(now_ms: int) -> str:
    """A dispatched agent's default name: ``agent-`` and the instant it is made (milliseconds,
    base 36) and 32 random bits. Never the name of an agent made before, also once that one is
    retired and its principal gone, so each name in the log and the transfers is one agent."""
    digits, n = "", max(now_ms, 0)
    while True:
        n, r = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if not n:
            return f"agent-{digits}-{secrets.token_hex(4)}"


def _assignee_or_free(item: Item, me: Principal) -> bool:
    """``item`` is nobody's, or ``me``'s by a claim that was not force-released (revoked)."""
    return item.assignee is None or (item.assignee == me.name and not item.revoked)


def _same_completion(first: Any, epoch: int, me: Principal) -> bool:
    """Whether the completion an ``op_id`` recorded is this one again: the same epoch, by the
    same principal (records from before the principal was kept count by epoch alone)."""
    return (
        isinstance(first, dict)
        and first.get("epoch") == epoch
        and first.get("by", me.name) == me.name
    )


class WorkQueue(QueueParking):
    """Items and claims. ``stall_ms``: a live claim without progress for this long is stalled."""

    def __init__(self, service: Engine, stall_ms: int | None = None) -> None:
        self.service = service
        self.store = service.store
        self.policy = service.policy
        self.stall_ms = stall_ms

    # items --------------------------------------------------------------------------------
    def create(
        self,
        who: Who,
        title: str,
        body: str = "",
        priority: int = 2,
        labels: Sequence[str] = (),
        parent: str | None = None,
        id: str | None = None,
        parent_epoch: int | None = None,
    ) -> Item:
        """A new open item. With ``parent_epoch``, created only while that epoch is the parent's
        current one and held by ``who`` (fenced like progress): a superseded owner of the parent
        cannot fan out work."""
        me = self._who(who)
        fields = {"title": title, "body": body, "priority": priority, "labels": labels}
        draft = ItemDraft.check(me, {**fields, **({} if id is None else {"id": id})}, parent)
        if parent_epoch is not None:
            if parent is None:
                raise InvalidRequest("parent_epoch: give the parent too", field="parent_epoch")
            epoch = v.check_token(parent_epoch, "parent_epoch")

            def fenced(tx: KeyTx, up: Item) -> ItemDecision:
                error = check_epoch(up, tx.record, epoch, me)
                if error is not None:
                    return ItemDecision(Decision(None), error=error)
                new = draft.item(tx.now)
                return ItemDecision(Decision(None), created=(new,), result=new)

            created: Item = self._fenced(parent, fenced)
            return created
        if parent is not None and self.store.get_item(parent) is None:
            raise NotFound(f"no parent item {parent!r}", what="item")
        with self.store.key_tx(item_key(draft.id)) as tx:
            item = draft.item(tx.now)
            self._add_items(tx, (item,))
            events = (created_event(item, me),)
            tx.append(events)
        self.service.committed(events)
        return item

    def _add_items(self, tx: KeyTx, items: Sequence[Item]) -> None:
        """Create ``items`` in ``tx``; an id that is taken fails it all (nothing is created)."""
        if items:  # one creator: the caller
            self.service._bound_items(tx, items[0].created_by, len(items))
        for item in items:
            if not tx.add_item(item):
                raise Conflict(f"id: an item {item.id!r} exists already", field="id")

    def update(self, who: Who, item_id: str, **changes: Any) -> ItemView:
        """Edit title, body, priority, labels or status; ``status: in_progress`` claims."""
        me = self._who(who)
        unknown = set(changes) - {"title", "body", "priority", "labels", "status"}
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field", field=sorted(unknown)[0])
        status = changes.pop("status", None)
        if status is not None and status not in ("open", "blocked", "in_progress"):
            raise InvalidRequest(
                "status: open, blocked or in_progress (use complete or cancel)", field="status"
            )
        edits = self._edits(changes)
        ttl = self._claim_args(item_id, None, None, None)[0] if status == "in_progress" else 0

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            # One transaction: the edits land only if the status change (or claim) does.
            if edits and not self._may_edit(me, item):
                return ItemDecision(Decision(None), error=not_assignee(item, me))
            if status == "in_progress":
                decision = decide_claim(
                    item, tx.record, me, ttl, None, False, None, tx.now, floor=floor_for(tx)
                )
            elif status is not None:
                decision = self._set_status(tx, item, me, status)
            elif item.status in CLOSED:
                error = Conflict(f"item {item.id!r} is {item.status}", field="status")
                decision = ItemDecision(Decision(None), error=error)
            else:
                decision = ItemDecision(Decision(None))
            if decision.error is not None or decision.lease.error is not None:
                return decision
            edited = (decision.item or item).update(**edits, updated_at=tx.now)
            events = (*decision.events, *edit_events(item, edited, me, status == "in_progress"))
            return replace(decision, item=edited if edits else decision.item, events=events)

        if edits or status is not None:
            self._run(item_id, decide, create=status == "in_progress")
        return self.get(item_id)

    def _may_edit(self, me: Principal, item: Item) -> bool:
        """Only its assignee or an authority over the assignee edits an assigned item; an
        assignee whose claim was force-released (revoked) is like anyone else."""
        owner = item.assignee
        if owner is None or (owner == me.name and not item.revoked):
            return True
        return self.service._may_force(me, owner)

    def _edits(self, changes: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "title" in changes:
            out["title"] = v.check_text("title", changes["title"], MAX_TITLE_CHARS)
        if "body" in changes:
            out["body"] = v.check_text("body", changes["body"], MAX_BODY_CHARS, required=False)
        if "priority" in changes:
            out["priority"] = check_priority(changes["priority"])
        if "labels" in changes:
            out["labels"] = check_labels(changes["labels"])
        return out

    def _set_status(self, tx: KeyTx, item: Item, me: Principal, status: str) -> ItemDecision:
        if item.status == PARKED:
            return ItemDecision(Decision(None), error=parked_error(item))
        if item.status in CLOSED or not _assignee_or_free(item, me):
            why = (
                f"item {item.id!r} is {item.status}"
                if item.status in CLOSED
                else (f"item {item.id!r} is assigned to {item.assignee!r}")
            )
            return ItemDecision(Decision(None), error=Conflict(why, field="status"))
        return ItemDecision(Decision(None), item.update(status=status, updated_at=tx.now))

    # claims --------------------------------------------------------------------------------
    def claim(
        self,
        who: Who,
        item_id: str,
        ttl_ms: int | None = None,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        session: str | None = None,
    ) -> Claim:
        """Claim the item for ``who``'s ``session`` (``None``: the default session): the same
        session claiming again renews; another session of ``who`` is refused (``LeaseHeld``)."""
        me = self._who(who)
        ttl, task, reason = self._claim_args(item_id, ttl_ms, task, reason, takeover)
        sid = v.check_session(session)

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            stalled, floor = self._stalled(item, tx.record, tx.now), floor_for(tx)
            return decide_claim(
                item, tx.record, me, ttl, task, takeover, reason, tx.now, sid, stalled, floor
            )

        lease: Lease = self._run(item_id, self._counting_lapse(decide), create=True)
        return Claim(self._item(item_id), lease)

    def _claim_args(
        self,
        item_id: str,
        ttl_ms: int | None,
        task: str | None,
        reason: str | None,
        takeover: object = False,
    ) -> tuple[int, str | None, str | None]:
        """The checked ttl, task and reason of a claim; a takeover needs a reason."""
        policy = self.service.policy.for_key(item_key(check_item_id(item_id)))
        if not isinstance(takeover, bool):
            raise InvalidRequest("takeover: true or false", field="takeover")
        if takeover and reason is None:
            raise InvalidRequest(
                "reason: a takeover needs a reason (it is recorded with the transfer)",
                field="reason",
            )
        reason = None if reason is None else v.check_text("reason", reason, v.MAX_REASON_CHARS)
        return v.check_ttl(ttl_ms, policy), v.check_task(task), reason

    def _stalled(self, item: Item, rec: KeyRecord | None, now: int) -> bool:
        return lease_state(item, rec, now, self.stall_for(item.id)) == "stalled"

    def renew(
        self, who: Who, item_id: str, epoch: int | None = None, ttl_ms: int | None = None
    ) -> Lease:
        item = self._item(item_id)
        return self.service._renew(who, item_key(item.id), self._epoch(item, epoch), ttl_ms)

    def extend(
        self,
        who: Who,
        item_id: str,
        until: int | None = None,
        by_ms: int | None = None,
        epoch: int | None = None,
    ) -> ExtendResult:
        item = self._item(item_id)
        return self.service._extend(who, item_key(item.id), self._epoch(item, epoch), until, by_ms)

    def _epoch(self, item: Item, epoch: int | None) -> int:
        """The epoch given (checked), else the item's own; an item never claimed has none."""
        if epoch is not None:
            return v.check_token(epoch, "epoch")
        if item.epoch == 0:
            raise NotFound(
                f"item {item.id!r} was never claimed", key=item_key(item.id), what="claim"
            )
        return item.epoch

    def release(
        self,
        who: Who,
        item_id: str,
        epoch: int | None = None,
        session: str | None = None,
        reason: str | None = None,
        exit_status: int | None = None,
    ) -> ItemRelease:
        """End my claim and retire my assignee edge. Fenced by ``epoch``: an epoch that is no
        longer the item's answers ``released: False`` and changes nothing. Without ``epoch``,
        only my ``session``'s own live claim is released. ``reason`` (``command_exited``) and
        ``exit_status`` say why, recorded on the transfer and the events."""
        me = self._who(who)
        epoch = v.check_optional_token(epoch, "epoch")
        sid = v.check_session(session)
        cause = ReleaseCause.of(reason, exit_status)
        limit = self.max_attempts(item_id)

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            decision = decide_item_release(item, tx.record, me, tx.now, epoch, sid, cause)
            status = cause.exit_status if cause else None
            return after_release(decision, item, status, limit, tx.now)

        released, item = self._run(item_id, decide)
        return ItemRelease(released, item)

    def force_release(self, who: Who, item_id: str, reason: str) -> Claim:
        """An authority ends the item's live claim; the edge stays, the old epoch is dead.

        The lease's ending and the ``force_released`` transfer are one transaction.
        """
        actor = self._who(who)
        check_item_id(item_id)
        reason = v.check_text("reason", reason, v.MAX_REASON_CHARS)

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            rec = tx.record
            allowed = rec is not None and self.service._may_force(actor, rec.holder)
            lease = decide_force_release(rec, item_key(item.id), actor, reason, allowed, tx.now)
            if lease.error is not None:
                return ItemDecision(lease)
            transfer = Transfer(
                item.id,
                lease.result.lease.holder,
                item.assignee,
                item.epoch,
                "force_released",
                actor.name,
                tx.now,
                reason,
            )
            # the edge stays, revoked: even its assignee needs a takeover to claim again
            revoked = item.update(revoked=True, updated_at=tx.now) if item.assignee else None
            return ItemDecision(lease, revoked, (transfer,), (), lease.result)

        result: ForceReleaseResult = self._run(item_id, decide)
        return Claim(self._item(item_id), result.lease)

    def reassign(self, who: Who, item_id: str, to: str, reason: str) -> Item:
        """An authority (admin, supervisor, or an ancestor of the assignee) moves the item to
        ``to``: any live claim ends, its epoch is dead, the edge moves, in one transaction,
        recorded as a ``reassigned`` transfer. ``to`` then claims without a takeover."""
        actor = self._who(who)
        check_item_id(item_id)
        to = v.check_text("to", to, 256)
        reason = v.check_text("reason", reason, v.MAX_REASON_CHARS)
        if self.store.get_principal(to) is None:
            raise NotFound(f"to: no principal named {to!r}", what="principal")

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            allowed = self._may_reassign(actor, item)
            return decide_reassign(item, tx.record, actor, to, reason, allowed, tx.now)

        moved: Item = self._run(item_id, decide)
        return moved

    def _may_reassign(self, actor: Principal, item: Item) -> bool:
        if item.assignee is None:
            return actor.is_admin or actor.is_supervisor
        return self.service._may_force(actor, item.assignee)

    def progress(
        self,
        who: Who,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> Item:
        me = self._who(who)
        epoch = v.check_token(epoch, "epoch")
        report: dict[str, Any] = {"message": v.check_text("message", message, 4096)}
        if percent is not None:
            if not v.is_int(percent) or not 0 <= percent <= 100:
                raise InvalidRequest("percent: an integer from 0 to 100", field="percent")
            report["percent"] = percent
        if data is not None:
            policy = self.service.policy.for_key(item_key(check_item_id(item_id)))
            if v.check_meta(data, policy, "data") is not None:
                report["data"] = data
        updated: Item = self._fenced(
            item_id, lambda tx, item: decide_progress(item, tx.record, me, epoch, report, tx.now)
        )
        self.service.count_write("accepted")
        return updated

    def complete(
        self,
        who: Who,
        item_id: str,
        epoch: int,
        result: Any = None,
        op_id: str | None = None,
        follow_ups: Sequence[dict[str, Any]] | None = None,
    ) -> Completion:
        """Fenced completion. ``follow_ups`` (items to create under this one) are created in
        the completion's transaction, so exactly once per completion (and per ``op_id``)."""
        me = self._who(who)
        epoch = v.check_token(epoch, "epoch")
        policy = self.service.policy.for_key(item_key(check_item_id(item_id)))
        v.check_value(result, policy, "result")
        if op_id is not None:
            op_id = v.check_text("op_id", op_id, v.MAX_OP_ID_CHARS)
        drafts = () if follow_ups is None else follow_up_drafts(me, follow_ups, item_id)
        duplicate: list[Any] = []
        made: list[Item] = []  # the follow-ups this completion created

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            first = tx.find_item_op(item.id, op_id) if op_id is not None else None
            if first is not None and _same_completion(first, epoch, me):
                duplicate.append(first)
                return ItemDecision(Decision(None), result=item)
            decision = decide_complete(item, tx.record, me, epoch, result, tx.now)
            if decision.error is not None or decision.lease.error is not None:
                return decision
            created = tuple(d.item(tx.now) for d in drafts)
            if op_id is not None:
                ids = [c.id for c in created]
                tx.save_item_op(item.id, op_id, {"epoch": epoch, "by": me.name, "follow_ups": ids})
            events = (*decision.events, *(created_event(c, me) for c in created))
            made[:] = created
            return replace(decision, created=created, events=events)

        done: Item = self._fenced(item_id, decide)
        self.service.count_write("duplicate" if duplicate else "accepted")
        if duplicate:  # the follow-ups of the first completion, as they are now
            ids = duplicate[0].get("follow_ups", [])
            made[:] = [x for x in (self.store.get_item(i) for i in ids) if x is not None]
        return Completion(done, bool(duplicate), tuple(made))

    def cancel(self, who: Who, item_id: str, reason: str) -> Item:
        me = self._who(who)
        reason = v.check_text("reason", reason, v.MAX_REASON_CHARS)

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            return decide_cancel(item, tx.record, me, reason, self._may_cancel(me, item), tx.now)

        cancelled: Item = self._run(item_id, decide)
        return cancelled

    def dispatch(
        self,
        who: Who,
        item_id: str,
        agent: str | None = None,
        ttl_ms: int | None = None,
        task: str | None = None,
        session: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
    ) -> Dispatch:
        """Claim the item for a new child agent of the caller, in one transaction; the claim
        belongs to the agent's ``session`` (the process that will hold it).

        ``takeover`` (with a ``reason``) re-dispatches an item whose claim lapsed, was revoked
        or stalled, when it is assigned to the caller or to one of the caller's agents (their
        supervisor was ``kill -9``ed), or when the caller may force-release its assignee."""
        me = self._who(who)
        ttl, task, reason = self._claim_args(item_id, ttl_ms, task, reason, takeover)
        sid = v.check_session(session)
        suffix = agent if agent is not None else agent_name(self.store.now_ms())
        name = f"{me.name}/{suffix}"
        if (
            not isinstance(suffix, str)
            or not NAME_RE.fullmatch(suffix)
            or not NAME_RE.fullmatch(name)
        ):
            raise InvalidRequest(
                "agent: letters, digits and . _ @ : / -, starting with a letter or digit "
                "(128 characters with your name and '/')",
                field="agent",
            )
        child = check_principal(name, "agent", [], me.name)
        if self.store.get_principal(child.name) is not None:
            raise Conflict(f"agent: {child.name!r} exists already", field="agent")
        token_id, token = new_token()

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            if takeover and not self._may_redispatch(me, item):
                error = Forbidden(
                    f"{me.name!r} may not take item {item.id!r} over from {item.assignee!r}",
                    key=item_key(item.id),
                    actor=me.name,
                    reason=reason,
                )
                return ItemDecision(Decision(None), error=error)
            stalled, floor = self._stalled(item, tx.record, tx.now), floor_for(tx)
            decision = decide_claim(
                item, tx.record, child, ttl, task, takeover, reason, tx.now, sid, stalled, floor
            )
            if decision.error is not None or decision.lease.error is not None or not decision.item:
                return refused_dispatch(decision, me)
            limit = self.service.quotas.live_agents
            working = tx.live_agents(me.name, limit)
            if working >= limit:  # raised: the transaction writes nothing
                raise refuse_agent(me.name, item_key(item.id), limit, working)
            # the agent's token ends with its claim (the reaper revokes it), or at the latest
            # when the claim could last no longer: the policy's max_lease from now
            lifetime = self.service.policy.for_key(item_key(item.id)).max_lease
            first = NewToken(hash_token(token), token_id, tx.now + lifetime)
            tx.add_principal(child, first, item.id)
            return dispatched(decision, me, child, token_id, reason)

        lease: Lease = self._run(item_id, self._counting_lapse(decide), create=True)
        return Dispatch(self._item(item_id), lease, child, token)

    def record_stalls(self, limit: int = 1000) -> int:
        """Record a ``stalled`` event, once per claim, for the live claims that made no
        progress for their ``stall_after`` (the reaper's job); how many it recorded."""
        now = self.store.now_ms()
        shortest = self.stall_ms if self.stall_ms is not None else self.policy.shortest_stall()
        found = 0
        for item_id in self.store.stalled_claims(now, now - shortest, limit):
            recorded: bool = self._run(item_id, self._stall_check)
            found += recorded
        return found

    def _stall_check(self, tx: KeyTx, item: Item) -> ItemDecision:
        return decide_stall(item, tx.record, tx.now, self.stall_for(item.id))

    def _may_redispatch(self, me: Principal, item: Item) -> bool:
        owner = item.assignee
        if owner is None or owner == me.name or me.name in self.service.ancestors(owner):
            return True
        return self.service._may_force(me, owner)

    def _fenced(self, item_id: str, decide: Callable[[KeyTx, Item], ItemDecision]) -> Any:
        """:meth:`_run` for a write fenced by the epoch, counting stale ones."""
        try:
            return self._run(item_id, decide)
        except StaleToken:
            self.service.count_write("stale")
            raise

    def _run(
        self, item_id: str, decide: Callable[[KeyTx, Item], ItemDecision], *, create: bool = False
    ) -> Any:
        check_item_id(item_id)
        if create:
            self._item(item_id)  # no lease row for an item that does not exist
        with self.store.key_tx(item_key(item_id), create=create) as tx:
            item = tx.item(item_id)
            if item is None:
                raise NotFound(f"no item {item_id!r}", key=item_key(item_id), what="item")
            decision = decide(tx, item)
            if decision.lease.error is None and decision.error is None:
                self.service._bound_lease(tx, decision.lease.record)  # a new claim
            if decision.lease.record is not None:
                tx.save(decision.lease.record)
            if decision.item is not None:
                tx.save_item(decision.item)
            self._add_items(tx, decision.created)
            if decision.transfers:
                tx.add_transfers(decision.transfers)
            events = (*decision.lease.events, *decision.events)
            if events:
                tx.append(events)
        self.service.committed(events)
        return decision.raise_or_result()
