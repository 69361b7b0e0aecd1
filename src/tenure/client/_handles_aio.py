"""The handles of an :class:`~tenure.client.AsyncClient`: a lease held with a heartbeat task
(:class:`AsyncLeaseHandle`, and :class:`AsyncFencedLeaseHandle`, which admits its token in
fences first) and a claim on an item held the same way (:class:`AsyncWorkHandle`).

The blocking handles of :mod:`tenure.client._handles` are generated from this module by
``scripts/gen_sync.py``: write a change here and run it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any

from tenure.client import _item_requests as ic
from tenure.client import _wire as sh
from tenure.client._call import Call
from tenure.client._fences import Admits, admit_all_async, check_fences
from tenure.client._held_aio import AsyncCaller, _AsyncHeld
from tenure.client._work_state import _Work
from tenure.core.claims import Completion, ItemRelease
from tenure.core.items import Item
from tenure.core.models import Lease, ReleaseResult
from tenure.errors import LeaseHeld, TenureError
from tenure.verbs import items as iv
from tenure.verbs import leases as lv
from tenure.verbs.item_inputs import FollowUp


class AsyncLeaseHandle(_AsyncHeld):
    """A lease held by an :class:`~tenure.client.AsyncClient` with a heartbeat task.

    Use it as an async context manager (``async with client.lease(...) as lease``). When the
    lease is lost, the task that entered the block is cancelled and leaving the block raises
    :class:`~tenure.LeaseLost`. The block must not block the event loop (the heartbeat runs on
    it).
    """

    async def release(self) -> ReleaseResult:
        """Stop the heartbeat and release the lease now (errors raise, unlike on exit)."""
        self._held()
        await self._stop_heartbeat()
        result = await self._client.release(self.key, self.token)
        self._released = True
        return result

    def _renew_call(self, token: int) -> Call[Lease]:
        return lv.RENEW.call(key=self.key, token=token)

    def _release_call(self, token: int) -> Call[Any]:
        return sh.release(self.key, token)

    async def _acquire(self) -> tuple[Lease, float]:
        give_up = time.monotonic() + (self.wait or 0)
        while True:
            try:
                call = self._acquire_call(give_up, self._client.session)
                lease, sent = await self._client._granted(call, self.key)
            except LeaseHeld as held:
                await asyncio.sleep(self._pause_or_raise(held, give_up))  # a long poll's chunk
                continue
            self._granted_key(lease)
            if not self._confirm_needed(sent):
                return lease, sent
            try:
                return await self._client._timed(lv.RENEW.call(key=self.key, token=lease.token))
            except BaseException:
                await self._quiet_release(lease.token)
                raise


class AsyncFencedLeaseHandle(AsyncLeaseHandle):
    """A lease handle (:class:`AsyncLeaseHandle`) that admits its token in ``fences`` as soon
    as it is granted, before the block runs (a refusal releases the lease and raises)."""

    def __init__(self, *args: Any, fences: Iterable[Admits] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fences = check_fences(fences)

    async def _acquire(self) -> tuple[Lease, float]:
        lease, sent = await super()._acquire()
        try:
            await admit_all_async(self.fences, self.key, lease.token)
        except BaseException:
            await self._quiet_release(lease.token)
            raise
        return lease, sent


class AsyncWorkHandle(_Work[AsyncCaller], _AsyncHeld):
    """A claim on an item held by an :class:`~tenure.client.AsyncClient` with a heartbeat task.

    ``async with client.items.work(item_id, ttl=30, task=None, takeover=False, reason=None,
    fences=None) as work`` claims on entry, renews every ``ttl``/3, and on exit releases the
    claim unless it was completed (or the item went to someone else); ``fences`` admit the
    epoch for ``items/<id>`` at once, as on a lease (a refusal releases the claim and
    raises). ``work.epoch``, ``work.item``, ``work.lost``, ``work.check()`` and
    ``work.wait_lost()`` behave as on a lease handle. When the claim is
    lost, the task that entered the block is cancelled and leaving the block raises
    :class:`~tenure.LeaseLost`.
    """

    async def progress(
        self, message: str, percent: int | None = None, data: dict[str, Any] | None = None
    ) -> Item:
        """Report progress with this claim's epoch."""
        call = iv.PROGRESS_ITEM.call(
            id=self.item_id, epoch=self.epoch, message=message, percent=percent, data=data
        )
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
        call = iv.COMPLETE_ITEM.call(
            id=self.item_id, epoch=self.epoch, result=result, op_id=op_id, follow_ups=follow_ups
        )
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

    async def release(
        self, reason: str | None = None, exit_status: int | None = None
    ) -> ItemRelease:
        """Stop the heartbeat and release the claim now (errors raise, unlike on exit);
        ``reason="command_exited"`` and ``exit_status`` record why."""
        self._held()
        await self._stop_heartbeat()
        call = ic.release_item(self.item_id, self.epoch, None, reason, exit_status)
        result = await self._client._call(call)
        self._released = True
        self._item = result.item
        return result

    def __init__(self, *args: Any, fences: Iterable[Admits] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fences = check_fences(fences)

    async def _acquire(self) -> tuple[Lease, float]:
        call = self._claim_call(self.ttl, self.task, self._client.session)
        claim, sent = await self._client._timed(call)
        lease = self._claimed(claim)
        try:  # the epoch, admitted under items/<id> before the block runs
            await admit_all_async(self.fences, self.key, lease.token)
        except BaseException:
            await self._quiet_release(lease.token)
            raise
        return lease, sent
