# generated from _handles_aio.py by python scripts/gen_sync.py; do not edit
"""The handles of a :class:`~tenure.client.Client`: a lease held with a heartbeat thread
(:class:`LeaseHandle`, and :class:`FencedLeaseHandle`, which admits its token in fences
first) and a claim on an item held the same way (:class:`WorkHandle`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from tenure.client import _item_requests as ic
from tenure.client import _wire as sh
from tenure.client._call import Call
from tenure.client._fences import Admits, admit_all, check_fences
from tenure.client._held import Caller, _SyncHeld
from tenure.client._work_state import _Work
from tenure.core.claims import Completion, ItemRelease
from tenure.core.items import Item
from tenure.core.models import Lease, ReleaseResult
from tenure.errors import LeaseHeld, TenureError
from tenure.verbs import items as iv
from tenure.verbs import leases as lv
from tenure.verbs.item_inputs import FollowUp


class LeaseHandle(_SyncHeld):
    """A lease held by a :class:`~tenure.client.Client` with a heartbeat thread.

    Use it as a context manager (``with client.lease(...) as lease``); see
    :mod:`tenure.client.lease` for how a lost lease is reported.
    """

    def release(self) -> ReleaseResult:
        """Stop the heartbeat and release the lease now (errors raise, unlike on exit)."""
        self._held()
        self._stop_heartbeat()
        result = self._client.release(self.key, self.token)
        self._released = True
        return result

    def _renew_call(self, token: int) -> Call[Lease]:
        return lv.RENEW.call(key=self.key, token=token)

    def _release_call(self, token: int) -> Call[Any]:
        return sh.release(self.key, token)

    def _acquire(self) -> tuple[Lease, float]:
        give_up = time.monotonic() + (self.wait or 0)
        while True:
            try:
                call = self._acquire_call(give_up, self._client.session)
                lease, sent = self._client._granted(call, self.key)
            except LeaseHeld as held:
                time.sleep(self._pause_or_raise(held, give_up))  # a long poll's chunk
                continue
            self._granted_key(lease)
            if not self._confirm_needed(sent):
                return lease, sent
            try:
                return self._client._timed(lv.RENEW.call(key=self.key, token=lease.token))
            except BaseException:
                self._quiet_release(lease.token)
                raise


class FencedLeaseHandle(LeaseHandle):
    """A lease handle (:class:`LeaseHandle`) that admits its token in ``fences`` as soon
    as it is granted, before the block runs (a refusal releases the lease and raises)."""

    def __init__(self, *args: Any, fences: Iterable[Admits] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fences = check_fences(fences)

    def _acquire(self) -> tuple[Lease, float]:
        lease, sent = super()._acquire()
        try:
            admit_all(self.fences, self.key, lease.token)
        except BaseException:
            self._quiet_release(lease.token)
            raise
        return lease, sent


class WorkHandle(_Work[Caller], _SyncHeld):
    """A claim on an item held by a :class:`~tenure.client.Client` with a heartbeat thread.

    ``with client.items.work(item_id, ttl=30, task=None, takeover=False, reason=None,
    fences=None) as work`` claims on entry, renews every ``ttl``/3, and on exit releases the
    claim unless it was completed (or the item went to someone else); ``fences`` admit the
    epoch for ``items/<id>`` at once, as on a lease (a refusal releases the claim and
    raises). ``work.epoch``, ``work.item``, ``work.lost``, ``work.check()`` and
    ``work.wait_lost()`` behave as on a lease handle.
    """

    def progress(
        self, message: str, percent: int | None = None, data: dict[str, Any] | None = None
    ) -> Item:
        """Report progress with this claim's epoch."""
        call = iv.PROGRESS_ITEM.call(
            id=self.item_id, epoch=self.epoch, message=message, percent=percent, data=data
        )
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
        call = iv.COMPLETE_ITEM.call(
            id=self.item_id, epoch=self.epoch, result=result, op_id=op_id, follow_ups=follow_ups
        )
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

    def release(self, reason: str | None = None, exit_status: int | None = None) -> ItemRelease:
        """Stop the heartbeat and release the claim now (errors raise, unlike on exit);
        ``reason="command_exited"`` and ``exit_status`` record why."""
        self._held()
        self._stop_heartbeat()
        call = ic.release_item(self.item_id, self.epoch, None, reason, exit_status)
        result = self._client._call(call)
        self._released = True
        self._item = result.item
        return result

    def __init__(self, *args: Any, fences: Iterable[Admits] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fences = check_fences(fences)

    def _acquire(self) -> tuple[Lease, float]:
        call = self._claim_call(self.ttl, self.task, self._client.session)
        claim, sent = self._client._timed(call)
        lease = self._claimed(claim)
        try:  # the epoch, admitted under items/<id> before the block runs
            admit_all(self.fences, self.key, lease.token)
        except BaseException:
            self._quiet_release(lease.token)
            raise
        return lease, sent
