"""A claim held with a heartbeat: ``with client.items.work(item_id) as work:``
(:class:`WorkHandle`) and its asyncio twin (:class:`AsyncWorkHandle`).

The handle claims the item on entry and renews the claim every ``ttl``/3 through
``POST /v1/items/{id}/renew``, like ``client.lease`` holds a lease (:mod:`tenure.client.lease`):
a lost claim is reported the same way (``work.lost``, ``work.check()``, ``on_lost``; the async
block is cancelled). ``work.progress(...)`` and ``work.complete(...)`` send the claim's epoch
for you; a stale epoch (someone took the item over) raises :class:`~tenure.StaleToken` naming
the current epoch and holder, and marks the work lost. Leaving the block without completing
releases the claim with its epoch, so a handle whose claim lapsed never releases a newer claim;
a claim that was taken over or force-released is not released at all (a force-released claim
stays assigned to you, ``revoked``, until an authority reassigns it or someone, you included,
claims it with ``takeover=True`` and a reason).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tenure.client import _item_calls as ic
from tenure.client._item_calls import FollowUp
from tenure.client._shared import Call
from tenure.client.lease import _AsyncHeld, _State, _SyncHeld
from tenure.core.claims import Claim, Completion, ItemRelease
from tenure.core.items import Item, item_key
from tenure.core.models import Lease
from tenure.errors import TenureError

if TYPE_CHECKING:
    from tenure.client.aio import AsyncClient
    from tenure.client.sync import Client

# Losses that mean the item is someone else's now, or an authority's to decide: leaving the
# block does not release it. A force-released claim keeps its (revoked) edge: the authority
# reassigns it, or someone takes it over with a reason. A revoked token releases nothing.
ELSEWHERE = frozenset(
    {"taken_over", "not_holder", "stale_token", "force_released", "unauthenticated"}
)


class _Work:
    """What both work handles know besides the lease: the item, the claim, the completion."""

    _state: _State
    _finished: bool
    _released: bool
    _reported: bool

    def _init_work(self, item_id: str, takeover: bool, reason: str | None) -> None:
        self.item_id = item_id
        self.takeover = takeover
        self.reason = reason
        self._claim: Claim | None = None
        self._item: Item | None = None
        self._completion: Completion | None = None
        self._elsewhere = False  # a fenced write said the item has another owner now

    def _claim_call(self, ttl: float, task: str | None, session: str) -> Call[Claim]:
        ttl_ms = max(1, round(ttl * 1000))
        return ic.claim_item(self.item_id, ttl_ms, task, self.takeover, self.reason, session)

    def _claimed(self, claim: Claim) -> Lease:
        self._claim, self._item = claim, claim.item
        return claim.lease

    @property
    def claim(self) -> Claim:
        """The claim as granted on entry (item and lease)."""
        if self._claim is None:
            raise RuntimeError("the item is not claimed yet (enter the handle first)")
        return self._claim

    @property
    def item(self) -> Item:
        """The item as of the latest reply (claim, progress, complete or release)."""
        if self._item is None:
            raise RuntimeError("the item is not claimed yet (enter the handle first)")
        return self._item

    @property
    def completion(self) -> Completion | None:
        """The completion, once :meth:`complete` succeeded."""
        return self._completion

    def _work_release(self) -> bool:
        """Whether leaving should release the claim (see the module's documentation)."""
        if self._released or self._finished or self._elsewhere:
            return False
        return self._state.reason not in ELSEWHERE

    def _fenced_out(self, err: TenureError) -> None:
        """A fenced write refused for the epoch: the claim is someone else's now."""
        if err.code == "stale_token":
            self._elsewhere = True
            self._state.mark(err.code, err)
            self._reported = True


class WorkHandle(_Work, _SyncHeld):
    """A claim on an item held by a :class:`~tenure.client.Client` with a heartbeat thread.

    ``with client.items.work(item_id, ttl=30, task=None, takeover=False, reason=None) as work``
    claims on entry, renews every ``ttl``/3, and on exit releases the claim unless it was
    completed (or the item went to someone else). ``work.epoch``, ``work.item``, ``work.lost``,
    ``work.check()`` and ``work.wait_lost()`` behave as on a lease handle.
    """

    def __init__(
        self,
        client: Client,
        item_id: str,
        ttl: float = 30.0,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        on_lost: Callable[[WorkHandle], object] | None = None,
    ) -> None:
        _SyncHeld.__init__(self, client, item_key(item_id), ttl, task, None, None, on_lost)
        self._init_work(item_id, takeover, reason)

    @property
    def epoch(self) -> int:
        """The claim's epoch (its lease's token): what progress and completion are fenced by."""
        return self._held().token

    def progress(
        self, message: str, percent: int | None = None, data: dict[str, Any] | None = None
    ) -> Item:
        """Report progress with this claim's epoch."""
        call = ic.progress_item(self.item_id, self.epoch, message, percent, data)
        try:
            self._item = self._client._call(call)
        except TenureError as err:
            self._fenced_out(err)
            raise
        return self._item

    def complete(
        self,
        result: Any = None,
        op_id: str | None = None,
        follow_ups: Sequence[FollowUp] | None = None,
    ) -> Completion:
        """Complete the item with this claim's epoch, creating its ``follow_ups`` (see
        ``client.items.complete``); the heartbeat stops, nothing is released."""
        call = ic.complete_item(self.item_id, self.epoch, result, op_id, follow_ups)
        with self._beat_lock:  # no renewal runs into the completion
            try:
                done = self._client._call(call)
            except TenureError as err:
                self._fenced_out(err)
                raise
            self._finished = True
        self._completion, self._item = done, done.item
        self._stop_heartbeat()
        return done

    def release(self) -> ItemRelease:
        """Stop the heartbeat and release the claim now (errors raise, unlike on exit)."""
        self._held()
        self._stop_heartbeat()
        result = self._client._call(ic.release_item(self.item_id, self.epoch))
        self._released = True
        self._item = result.item
        return result

    def _acquire(self) -> tuple[Lease, float]:
        call = self._claim_call(self.ttl, self.task, self._client.session)
        claim, sent = self._client._timed(call)
        return self._claimed(claim), sent

    def _renew_call(self, token: int) -> Call[Lease]:
        return ic.renew_item(self.item_id, token)

    def _release_call(self, token: int) -> Call[Any]:
        return ic.release_item(self.item_id, token)  # a stale epoch releases nothing

    def _should_release(self) -> bool:
        return self._work_release()

    def _outcome(self, exc: BaseException | None) -> None:
        if not self._finished:  # a completed item needs its claim no more
            super()._outcome(exc)


class AsyncWorkHandle(_Work, _AsyncHeld):
    """A claim on an item held by an :class:`~tenure.client.AsyncClient` with a heartbeat task.

    The async twin of :class:`WorkHandle`: when the claim is lost, the task that entered the
    block is cancelled and leaving the block raises :class:`~tenure.LeaseLost`.
    """

    def __init__(
        self,
        client: AsyncClient,
        item_id: str,
        ttl: float = 30.0,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        on_lost: Callable[[AsyncWorkHandle], object] | None = None,
    ) -> None:
        _AsyncHeld.__init__(self, client, item_key(item_id), ttl, task, None, None, on_lost)
        self._init_work(item_id, takeover, reason)

    @property
    def epoch(self) -> int:
        """The claim's epoch (its lease's token): what progress and completion are fenced by."""
        return self._held().token

    async def progress(
        self, message: str, percent: int | None = None, data: dict[str, Any] | None = None
    ) -> Item:
        """Report progress with this claim's epoch."""
        call = ic.progress_item(self.item_id, self.epoch, message, percent, data)
        try:
            self._item = await self._client._call(call)
        except TenureError as err:
            self._fenced_out(err)
            raise
        return self._item

    async def complete(
        self,
        result: Any = None,
        op_id: str | None = None,
        follow_ups: Sequence[FollowUp] | None = None,
    ) -> Completion:
        """Complete the item with this claim's epoch, creating its ``follow_ups`` (see
        ``client.items.complete``); the heartbeat stops, nothing is released."""
        call = ic.complete_item(self.item_id, self.epoch, result, op_id, follow_ups)
        async with self._beat_lock:  # no renewal runs into the completion
            try:
                done = await self._client._call(call)
            except TenureError as err:
                self._fenced_out(err)
                raise
            self._finished = True
        self._completion, self._item = done, done.item
        await self._stop_heartbeat()
        return done

    async def release(self) -> ItemRelease:
        """Stop the heartbeat and release the claim now (errors raise, unlike on exit)."""
        self._held()
        await self._stop_heartbeat()
        result = await self._client._call(ic.release_item(self.item_id, self.epoch))
        self._released = True
        self._item = result.item
        return result

    def _fenced_out(self, err: TenureError) -> None:
        # The block has the exception already: the heartbeat will not cancel it on top.
        if err.code == "stale_token":
            self._spare_host = True
        super()._fenced_out(err)

    async def _acquire(self) -> tuple[Lease, float]:
        call = self._claim_call(self.ttl, self.task, self._client.session)
        claim, sent = await self._client._timed(call)
        return self._claimed(claim), sent

    def _renew_call(self, token: int) -> Call[Lease]:
        return ic.renew_item(self.item_id, token)

    def _release_call(self, token: int) -> Call[Any]:
        return ic.release_item(self.item_id, token)  # a stale epoch releases nothing

    def _should_release(self) -> bool:
        return self._work_release()

    def _outcome(self, exc: BaseException | None) -> None:
        if not self._finished:  # a completed item needs its claim no more
            super()._outcome(exc)


__all__ = ["AsyncWorkHandle", "WorkHandle"]
