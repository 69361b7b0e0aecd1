"""Attempts and parking: the pure decisions of an item whose claims keep failing.

Each claim of an item is an attempt (``Item.attempts``). An attempt fails when its claim
lapses (its holder let the lease run out while still the assignee) or when its supervised
command exits with a non-zero status without completing it (a release with reason
``command_exited``). A release, a completion, a force-release, a reassignment or a takeover of a
live claim is no failure. When an item has failed the policy's ``max_attempts`` times (0:
never), its status becomes ``parked``: it is not ready and not claimable, its assignee keeps
it (it shows in the assignee's queue and briefing, and its ancestors'), until a person
reopens it (:func:`decide_reopen`), which sets it open with its attempts reset.
"""

from __future__ import annotations

from dataclasses import replace

from tenure.core.decide import Decision, may_not
from tenure.core.items import ItemDecision, Transfer, item_key
from tenure.core.models import EventDraft, KeyRecord, Principal
from tenure.core.work import CLOSED, PARKED, Failure, Item
from tenure.errors import Conflict, TenureError


def _parked_event(item: Item) -> EventDraft:
    return EventDraft(
        PARKED,
        item_key(item.id),
        item.assignee,
        None,
        item.epoch,
        reason=item.parked_words(),
        data={
            "item": item.id,
            "attempts": item.attempts,
            "failures": [f.to_dict() for f in item.failures],
        },
    )


def count_failure(
    item: Item, failure: Failure, max_attempts: int, assignee: str | None
) -> tuple[Item, tuple[EventDraft, ...]]:
    """``item`` with ``failure`` counted (once per epoch: a second one of the same epoch changes
    nothing), parked for ``assignee`` when it is the ``max_attempts``-th (0: never), with the
    ``parked`` event."""
    if item.counted_epoch >= failure.epoch or item.status in CLOSED:
        return item, ()
    counted = item.update(
        failures=(*item.failures, failure), counted_epoch=failure.epoch, updated_at=failure.at
    )
    if max_attempts <= 0 or len(counted.failures) < max_attempts:
        return counted, ()
    parked = counted.update(status=PARKED, assignee=assignee, revoked=False)
    return parked, (_parked_event(parked),)


def decide_lapse(item: Item, rec: KeyRecord | None, now: int, max_attempts: int) -> ItemDecision:
    """Count the lapse of ``item``'s current claim as a failed attempt (once per claim): its
    holder, still the assignee, let the lease run out (nobody ended it)."""
    lapsed = (
        rec is not None
        and item.status == "in_progress"
        and not item.revoked
        and item.epoch > 0
        and rec.token == item.epoch
        and rec.holder == item.assignee
        and rec.ended in (None, "expired")
        and not rec.is_live(now)
    )
    if not lapsed or item.counted_epoch >= item.epoch:
        return ItemDecision(Decision(None), result=False)
    assert rec is not None
    failure = Failure(item.epoch, "lapsed", rec.expires_at)
    counted, events = count_failure(item, failure, max_attempts, item.assignee)
    return ItemDecision(Decision(None), counted, events=events, result=True)


def after_release(
    decision: ItemDecision, before: Item, exit_status: int | None, max_attempts: int, now: int
) -> ItemDecision:
    """A release that said its command exited (``exit_status``): a non-zero status is a failed
    attempt, which parks the item (for the releasing assignee) at the limit."""
    released = decision.item
    if released is None or not exit_status or decision.error or decision.lease.error:
        return decision
    failure = Failure(before.epoch, "command_exited", now, exit_status)
    counted, events = count_failure(released, failure, max_attempts, before.assignee)
    flag = bool(decision.result[0]) if decision.result else False
    return replace(
        decision, item=counted, events=(*decision.events, *events), result=(flag, counted)
    )


def decide_reopen(
    item: Item, actor: Principal, reason: str, allowed: bool, now: int
) -> ItemDecision:
    """A person reopens a parked item: open, nobody's, its attempts and failures reset,
    recorded as a ``reopened`` transfer and event."""
    key = item_key(item.id)
    error: TenureError | None = None
    if item.status != PARKED:
        error = Conflict(
            f"item {item.id!r} is {item.status}, not parked: only a parked item is reopened",
            key=key,
            field="status",
        )
    elif not allowed:
        error = may_not(actor, f"reopen item {item.id!r} of {item.assignee!r}", key, reason)
    if error is not None:
        return ItemDecision(Decision(None), error=error)
    reopened = item.update(
        status="open", assignee=None, attempts=0, failures=(), revoked=False, updated_at=now
    )
    transfer = Transfer(
        item.id, item.assignee, None, item.epoch, "reopened", actor.name, now, reason
    )
    event = EventDraft(
        "reopened",
        key,
        item.assignee,
        None,
        item.epoch,
        actor=actor.name,
        reason=reason,
        data={"item": item.id, "previous": item.assignee, "attempts": item.attempts},
    )
    return ItemDecision(Decision(None), reopened, (transfer,), (event,), reopened)
