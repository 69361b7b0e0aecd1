"""The pure decisions of the shared work queue: a claim, a release, progress, completion.
The items, their transfers and views are in :mod:`tenure.core.work`.

A claim has two mechanisms: the durable ``assignee`` edge on the item (whose work it is) and the
ephemeral lease on ``items/<id>`` (someone is working it right now). The item's ``epoch`` is the
token of its latest acquisition; progress and completion are fenced by it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tenure.core.decide import (
    Decision,
    conflict_event,
    decide_acquire,
    decide_release,
    ending_event,
    held_by,
    may_not,
    settle,
)
from tenure.core.models import (
    EventDraft,
    KeyRecord,
    Lease,
    Principal,
    principal_created,
    token_event,
)
from tenure.core.states import claim_state
from tenure.core.work import (
    CLOSED,
    DEFAULT_PRIORITY,
    ITEM_PREFIX,
    REASONS,
    STATUSES,
    Item,
    ItemCursor,
    ItemQuery,
    ItemSummary,
    ItemView,
    ReleaseCause,
    Transfer,
    item_cursor,
    item_key,
    parked_error,
)
from tenure.errors import (
    AssignedToOther,
    Conflict,
    NotFound,
    NotHolder,
    StaleToken,
    TenureError,
)

__all__ = [  # the models live in tenure.core.work; many modules import them from here
    "CLOSED",
    "DEFAULT_PRIORITY",
    "ITEM_PREFIX",
    "REASONS",
    "STATUSES",
    "Item",
    "ItemCursor",
    "ItemDecision",
    "ItemQuery",
    "ItemSummary",
    "ItemView",
    "ReleaseCause",
    "Transfer",
    "item_cursor",
    "item_key",
]


@dataclass(frozen=True)
class ItemDecision:
    """A lease decision plus what it does to the item: saved together in one transaction."""

    lease: Decision
    item: Item | None = None  # the item to save, None when unchanged
    transfers: tuple[Transfer, ...] = ()
    events: tuple[EventDraft, ...] = ()
    result: Any = None
    error: TenureError | None = None
    created: tuple[Item, ...] = ()  # new items, created in the same transaction

    def raise_or_result(self) -> Any:
        if self.lease.error is not None:
            raise self.lease.error
        if self.error is not None:
            raise self.error
        return self.result


def _refuse(error: TenureError, lease: Decision | None = None) -> ItemDecision:
    return ItemDecision(lease or Decision(None), error=error)


def _missing(item_id: str) -> NotFound:
    return NotFound(f"no item {item_id!r}", key=item_key(item_id), what="item")


def _event(kind: str, item: Item, who: Principal, epoch: int, **data: Any) -> EventDraft:
    reason = data.pop("reason", None)
    return EventDraft(
        kind,
        item_key(item.id),
        item.assignee,
        None,
        epoch,
        actor=who.name,
        reason=reason,
        data={"item": item.id, **data},
    )


def decide_claim(
    item: Item | None,
    rec: KeyRecord | None,
    who: Principal,
    ttl_ms: int,
    task: str | None,
    takeover: bool,
    reason: str | None,
    now: int,
    session: str = "",
    stalled: bool = False,
    floor: int = 0,
) -> ItemDecision:
    """Claim ``item`` for ``who``'s ``session`` (a new epoch is above the token ``floor``).

    A live claim renews for its own session and is ``lease_held`` for anyone else, unless it is
    ``stalled`` (alive without progress) and this is a ``takeover``. A lapsed claim of someone
    else, and a ``revoked`` one (force-released) even of ``who``, needs a ``takeover``; refused,
    it is counted as a conflict."""
    if item is None:
        return _refuse(_missing(""))
    key = item_key(item.id)
    if item.status in CLOSED:
        return _refuse(Conflict(f"item {item.id!r} is {item.status}", key=key, field="status"))
    if item.status == "parked":
        return _refuse(parked_error(item))
    live = rec is not None and rec.is_live(now)
    own = live and rec is not None and (rec.holder, rec.session) == (who.name, session)
    if live and (own or not (takeover and stalled)):
        assert rec is not None  # our own session's claim renews; anyone else's is lease_held
        lease = decide_acquire(rec, key, who, ttl_ms, task, None, now, session)
        return ItemDecision(lease, result=lease.result)
    previous = item.assignee
    taking = live or item.revoked or previous not in (None, who.name)
    if taking and not takeover:
        return _assigned_to_other(item, rec, who, task, now)
    events: tuple[EventDraft, ...] = ()
    if rec is not None and rec.ended is None and taking:
        # The lapsed (or stalled) lease ends by this deliberate takeover rather than by expiry.
        events = (ending_event(rec, "taken_over", now, actor=who.name, reason=reason),)
        rec = rec.update(ended="taken_over")
    lease = decide_acquire(rec, key, who, ttl_ms, task, None, now, session, floor)
    granted: Lease = lease.result
    claimed = item.update(
        assignee=who.name,
        status="in_progress",
        epoch=granted.token,
        revoked=False,
        updated_at=now,
        attempts=item.attempts + 1,  # each claim is an attempt (a renewal is not)
    )
    kind = "taken_over" if taking else "claimed"
    transfer = Transfer(item.id, previous, who.name, granted.token, kind, who.name, now, reason)
    event = _event(
        "claimed", claimed, who, granted.token, reason=reason, previous=previous, transfer=kind
    )
    return ItemDecision(
        Decision(lease.record, events + lease.events, granted),
        claimed,
        (transfer,),
        (event,),
        granted,
    )


def _assigned_to_other(
    item: Item, rec: KeyRecord | None, who: Principal, task: str | None, now: int
) -> ItemDecision:
    """The refusal of a claim that needs a takeover, counted as a conflict on the key."""
    key = item_key(item.id)
    state = "revoked" if item.revoked else (rec.state(now) if rec else "none")
    if item.revoked and item.assignee == who.name:
        why = (
            f"your claim on item {item.id!r} was force-released (revoked); "
            "claim with takeover and a reason to take it back"
        )
    else:
        why = (
            f"item {item.id!r} is assigned to {item.assignee!r} (lease {state}); "
            "claim with takeover and a reason to move it"
        )
    error = AssignedToOther(
        why,
        key=key,
        assignee=item.assignee,
        lease_state=state,
        lapsed_at=rec.expires_at if rec else None,
    )
    settled, events = settle(rec, now)
    if settled is None:
        return _refuse(error)
    counted = settled.update(conflicts=settled.conflicts + 1)
    wanted = {"wanted_task": task, "code": "assigned_to_other", "assignee": item.assignee}
    conflict = conflict_event(settled, key, who, wanted)
    return ItemDecision(Decision(counted, (*events, conflict)), error=error)


def not_assignee(item: Item, who: Principal) -> NotHolder:
    """Someone who is neither the assignee nor an authority over it edits an assigned item
    (an assignee whose claim was force-released is no longer its assignee for this)."""
    revoked = " (its claim was force-released)" if item.revoked else ""
    return NotHolder(
        f"item {item.id!r} is assigned to {item.assignee!r}{revoked}: only its assignee or an "
        f"authority over it edits it, not {who.name!r}",
        key=item_key(item.id),
        holder=item.assignee,
    )


def edit_events(before: Item, after: Item, who: Principal, claimed: bool) -> tuple[EventDraft, ...]:
    """``item_edited`` (the fields changed) and ``item_status`` (from, to; not for a claim,
    which records ``claimed``) for an update from ``before`` to ``after``."""
    names = ("title", "body", "priority", "labels")
    fields = [f for f in names if getattr(before, f) != getattr(after, f)]
    out = []
    if fields:
        out.append(_event("item_edited", after, who, after.epoch, fields=fields))
    if before.status != after.status and not claimed:
        moved = {"from": before.status, "to": after.status}
        out.append(_event("item_status", after, who, after.epoch, **moved))
    return tuple(out)


def decide_reassign(
    item: Item | None,
    rec: KeyRecord | None,
    actor: Principal,
    to: str,
    reason: str,
    allowed: bool,
    now: int,
) -> ItemDecision:
    """An authority moves the item to ``to``: any live claim ends (``force_released``), its epoch
    is dead for progress and completion, and the edge moves, in one transaction. ``to`` then
    claims without a takeover."""
    if item is None:
        return _refuse(_missing(""))
    refusal = _refuse_act(
        item, actor, f"reassign item {item.id!r} of {item.assignee!r}", reason, allowed
    )
    if refusal is not None:
        return refusal
    record, events = _stop_claim(rec, actor, reason, now)
    moved = item.update(
        assignee=to,
        status="open" if item.status == "in_progress" else item.status,
        revoked=False,
        updated_at=now,
    )
    transfer = Transfer(
        item.id, item.assignee, to, item.epoch, "reassigned", actor.name, now, reason
    )
    event = _event("reassigned", moved, actor, item.epoch, reason=reason, previous=item.assignee)
    return ItemDecision(Decision(record, events), moved, (transfer,), (event,), moved)


def decide_item_release(
    item: Item | None,
    rec: KeyRecord | None,
    who: Principal,
    now: int,
    epoch: int | None = None,
    session: str = "",
    cause: ReleaseCause | None = None,
) -> ItemDecision:
    """Release my lease on the item (if any) and retire my assignee edge; reopen the item.

    ``released`` says whether a live lease of mine ended: a lapsed claim's lingering edge is
    retired all the same, with ``released: False``. Fenced by ``epoch``: an epoch that is no
    longer the item's answers ``released: False`` and changes nothing. Without ``epoch``, only
    ``session``'s own live claim is released (another session's is refused, like a stranger's).
    A ``cause`` (the supervised command exited) is recorded on the transfer and the events.
    """
    if item is None:
        return _refuse(_missing(""))
    if epoch is not None and epoch != item.epoch:
        return ItemDecision(Decision(None), result=(False, item))
    reason = cause.reason if cause else None
    lease = decide_release(rec, item_key(item.id), who, epoch, now, session, reason)
    released = bool(lease.result and lease.result.released)
    if lease.error is not None or item.assignee != who.name:
        return ItemDecision(lease, result=(released, item))
    reopened = item.update(  # nobody's any more: not revoked either
        assignee=None,
        updated_at=now,
        status="open" if item.status == "in_progress" else item.status,
        revoked=False,
    )
    transfer = Transfer(item.id, who.name, None, item.epoch, "released", who.name, now, reason)
    said = {"reason": reason, "exit_status": cause.exit_status} if cause else {}
    event = _event("released_item", reopened, who, item.epoch, previous=who.name, **said)
    if cause is not None:
        transfer = replace(transfer, exit_status=cause.exit_status)
        lease = replace(lease, events=tuple(_status_on(e, cause) for e in lease.events))
    return ItemDecision(lease, reopened, (transfer,), (event,), (released, reopened))


def _status_on(event: EventDraft, cause: ReleaseCause) -> EventDraft:
    """The lease's ``released`` event, with the exit status of the cause it names."""
    if event.type != "released":
        return event
    return replace(event, data={**event.data, "exit_status": cause.exit_status})


def check_epoch(
    item: Item, rec: KeyRecord | None, epoch: int, who: Principal
) -> TenureError | None:
    """Progress and completion: only the item's current epoch, only from the principal that
    holds it (any of its sessions), and only while the item is open."""
    current = rec.token if rec else 0
    if rec is None or epoch != current or not rec.fence_open or item.epoch != current:
        why = "was revoked" if rec and epoch == current else "is stale"
        return StaleToken(
            f"epoch {epoch} {why} for item {item.id!r}",
            key=item_key(item.id),
            token=epoch,
            current_token=current or None,
            holder=item.assignee,
        )
    if rec.holder != who.name:
        return NotHolder(
            f"epoch {epoch} of item {item.id!r} is held by {held_by(rec)}, not {who.name!r}",
            key=item_key(item.id),
            holder=rec.holder,
            session=rec.session,
            task=rec.task,
            expires_at=rec.expires_at,
        )
    if item.status in CLOSED:
        return Conflict(f"item {item.id!r} is {item.status}", key=item_key(item.id), field="status")
    return None


def _check_fenced(
    item: Item | None, rec: KeyRecord | None, epoch: int, who: Principal
) -> ItemDecision | None:
    """The refusal of a write fenced by ``epoch`` (progress, completion), if it is refused."""
    if item is None:
        return _refuse(_missing(""))
    error = check_epoch(item, rec, epoch, who)
    return None if error is None else _refuse(error)


def decide_progress(
    item: Item | None,
    rec: KeyRecord | None,
    who: Principal,
    epoch: int,
    progress: dict[str, Any],
    now: int,
) -> ItemDecision:
    refused = _check_fenced(item, rec, epoch, who)
    if refused is not None:
        return refused
    assert item is not None
    updated = item.update(  # progress ends a stall: a later one is recorded again
        progress={**progress, "by": who.name, "at": now},
        progress_at=now,
        stalled_epoch=0,
        updated_at=now,
    )
    event = _event("progress", updated, who, epoch, **progress)
    return ItemDecision(Decision(None), updated, (), (event,), updated)


def decide_complete(
    item: Item | None, rec: KeyRecord | None, who: Principal, epoch: int, result: Any, now: int
) -> ItemDecision:
    """Fenced completion: ends the lease, retires the edge, stores the result, sets ``done``."""
    refused = _check_fenced(item, rec, epoch, who)
    if refused is not None:
        return refused
    assert item is not None and rec is not None
    ended, events = settle(rec, now)
    assert ended is not None
    if ended.ended is None:
        ended = ended.update(ended="released")
        events = (*events, ending_event(rec, "released", now, who.name, "completed"))
    done = item.update(status="done", assignee=None, result=result, updated_at=now)
    transfer = Transfer(item.id, item.assignee, None, epoch, "completed", who.name, now)
    event = _event("completed", item, who, epoch)
    return ItemDecision(Decision(ended, events), done, (transfer,), (event,), done)


def _refuse_act(
    item: Item, who: Principal, act: str, reason: str, allowed: bool
) -> ItemDecision | None:
    """Why an act of authority (cancel, reassign) on ``item`` is refused, if it is."""
    key = item_key(item.id)
    if item.status in CLOSED:
        return _refuse(Conflict(f"item {item.id!r} is {item.status}", key=key, field="status"))
    if not allowed:
        return _refuse(may_not(who, act, key, reason))
    return None


def _stop_claim(
    rec: KeyRecord | None, who: Principal, reason: str, now: int
) -> tuple[KeyRecord | None, tuple[EventDraft, ...]]:
    """End the item's live claim by ``who``'s act (``released`` if it is its own, else
    ``force_released``) and kill its epoch for progress and completion."""
    record, events = settle(rec, now)
    if record is not None and record.ended is None:
        ending = "released" if record.holder == who.name else "force_released"
        events = (*events, ending_event(record, ending, now, who.name, reason))
        record = record.update(ended=ending, fence_open=False)
    elif record is not None:
        record = record.update(fence_open=False)
    return record, events


def decide_cancel(
    item: Item | None, rec: KeyRecord | None, who: Principal, reason: str, allowed: bool, now: int
) -> ItemDecision:
    if item is None:
        return _refuse(_missing(""))
    refusal = _refuse_act(item, who, f"cancel item {item.id!r}", reason, allowed)
    if refusal is not None:
        return refusal
    record, events = _stop_claim(rec, who, reason, now)
    cancelled = item.update(status="cancelled", assignee=None, updated_at=now)
    transfer = Transfer(
        item.id, item.assignee, None, item.epoch, "cancelled", who.name, now, reason
    )
    event = _event("cancelled", item, who, item.epoch, reason=reason)
    return ItemDecision(Decision(record, events), cancelled, (transfer,), (event,), cancelled)


def lease_state(item: Item, rec: KeyRecord | None, now: int, stall_ms: int) -> str:
    """The word of :func:`tenure.core.states.claim_state` (``live``, ``stalled``, ``lapsed``,
    ``revoked``, ``reassigned``, ``released`` or ``none``)."""
    return claim_state(item, rec, now, stall_ms).word


def dispatched(
    decision: ItemDecision,
    dispatcher: Principal,
    agent: Principal,
    token_id: str,
    reason: str | None,
) -> ItemDecision:
    """A claim made for a dispatched agent: its transfer is the dispatcher's act, and the
    events name the dispatcher (actor) and the agent (holder): the agent made, its token
    issued, the item dispatched."""
    item = decision.item
    assert item is not None
    transfers = tuple(replace(t, actor=dispatcher.name) for t in decision.transfers)
    made = (
        principal_created(agent, dispatcher.name),
        token_event("token_issued", agent.name, token_id, dispatcher.name),
        _event("dispatched", item, dispatcher, item.epoch, agent=agent.name, reason=reason),
    )
    return replace(decision, transfers=transfers, events=(*decision.events, *made))


def refused_dispatch(decision: ItemDecision, dispatcher: Principal) -> ItemDecision:
    """A dispatch refused: the agent it would have made is never created, so the events the
    refusal records (a ``conflict``) name the dispatcher as the actor, the agent in ``data``."""
    lease = decision.lease
    events = tuple(
        replace(e, actor=dispatcher.name, data={**e.data, "agent": e.actor})
        if e.type == "conflict"
        else e
        for e in lease.events
    )
    return replace(decision, lease=replace(lease, events=events))


def decide_stall(item: Item, rec: KeyRecord | None, now: int, stall_ms: int) -> ItemDecision:
    """Record once per claim that it is alive but made no progress for ``stall_ms``."""
    if item.stalled_epoch == item.epoch or lease_state(item, rec, now, stall_ms) != "stalled":
        return ItemDecision(Decision(None), result=False)
    assert rec is not None
    since = max(rec.acquired_at, item.progress_at or 0)
    data = {"item": item.id, "since": since, "stall_after": stall_ms, "session": rec.session}
    event = EventDraft("stalled", item_key(item.id), rec.holder, rec.task, rec.token, data=data)
    recorded = item.update(stalled_epoch=item.epoch)
    return ItemDecision(Decision(None), recorded, events=(event,), result=True)
