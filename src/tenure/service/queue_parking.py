"""Attempts and parking on the work queue: the reaper's count of lapsed claims, and the
reopening of a parked item (the rules are :mod:`tenure.core.parking`'s).
:class:`tenure.service.queue.WorkQueue` builds on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tenure.core import validate as v
from tenure.core.items import Item, ItemDecision, item_key
from tenure.core.models import Principal
from tenure.core.parking import decide_lapse, decide_reopen
from tenure.core.work import PARKED, parked_error
from tenure.service.engine import Engine, Who
from tenure.service.queue_views import QueueViews, check_item_id
from tenure.store.base import KeyTx

Decide = Callable[[KeyTx, Item], ItemDecision]


class QueueParking(QueueViews):
    """What the work queue does about failed attempts."""

    service: Engine

    def _run(
        self, item_id: str, decide: Callable[[KeyTx, Item], ItemDecision], *, create: bool = False
    ) -> Any:
        raise NotImplementedError  # the work queue's one item transaction

    def max_attempts(self, item_id: str) -> int:
        """The policy's ``max_attempts`` for ``item_id`` (0: never parked)."""
        return self.service.policy.for_key(item_key(check_item_id(item_id))).max_attempts

    def record_lapses(self, limit: int = 1000) -> int:
        """Count the lapse of each claim whose holder let it run out as a failed attempt (once
        per claim), parking the items at their ``max_attempts`` (the reaper's job); how many."""
        found = 0
        for item_id in self.store.lapsed_claims(self.store.now_ms(), limit):
            counted: bool = self._run(item_id, self._lapse_check)
            found += counted
        return found

    def _counting_lapse(self, decide: Decide) -> Decide:
        """``decide`` (a claim's) after counting the lapse of the claim it replaces, if the
        reaper has not yet: a claim that parks the item is refused (``parked``), the count
        kept."""

        def counted(tx: KeyTx, item: Item) -> ItemDecision:
            lapse = self._lapse_check(tx, item)
            if lapse.item is None:
                return decide(tx, item)
            if lapse.item.status == PARKED:
                return replace(lapse, error=parked_error(lapse.item))
            return decide(tx, lapse.item)

        return counted

    def _lapse_check(self, tx: KeyTx, item: Item) -> ItemDecision:
        return decide_lapse(item, tx.record, tx.now, self.max_attempts(item.id))

    def reopen(self, who: Who, item_id: str, reason: str) -> Item:
        """A person reopens a parked item: open, nobody's, its attempts reset; recorded as a
        ``reopened`` transfer. Its assignee, its creator and an authority over either may."""
        me = self._who(who)
        check_item_id(item_id)
        reason = v.check_text("reason", reason, v.MAX_REASON_CHARS)

        def decide(tx: KeyTx, item: Item) -> ItemDecision:
            allowed = self._may_cancel(me, item) or self._may_reopen(me, item)
            return decide_reopen(item, me, reason, allowed, tx.now)

        reopened: Item = self._run(item_id, decide)
        return reopened

    def _may_reopen(self, me: Principal, item: Item) -> bool:
        """The creator, and the assignee's ancestors (the person whose agent gave up)."""
        owner = item.assignee
        return me.name == item.created_by or (
            owner is not None and me.name in self.service.ancestors(owner)
        )

    def _may_cancel(self, me: Principal, item: Item) -> bool:
        owner = item.assignee or item.created_by
        return me.name == owner or self.service._may_force(me, owner)
