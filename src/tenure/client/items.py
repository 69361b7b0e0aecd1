"""The work queue in the clients: ``client.items`` and the work handle.

``client.items`` (:class:`Items` on :class:`~tenure.client.Client`, :class:`AsyncItems` on
:class:`~tenure.client.AsyncClient`) has the item verbs of SPEC §4 with the REST field names,
each one call returning a frozen model: :class:`~tenure.core.items.Item`,
:class:`~tenure.core.items.ItemView` (an item with its lease, lease state and transfers), and
:class:`~tenure.work.Claim`, :class:`~tenure.work.Completion`,
:class:`~tenure.work.ItemRelease`, :class:`~tenure.work.Dispatch`,
:class:`~tenure.work.Briefing`.

``with client.items.work(item_id, ttl=30) as work:`` claims the item and holds the claim like
``client.lease`` holds a lease (:mod:`tenure.client.lease`): the item's lease is renewed every
``ttl``/3 through ``POST /v1/items/{id}/renew`` and a lost claim is reported the same way
(``work.lost``, ``work.check()``, ``on_lost``; the async block is cancelled).
``work.progress(...)`` and ``work.complete(...)`` send the claim's epoch for you; a stale epoch
(someone took the item over) raises :class:`~tenure.StaleToken` naming the current epoch and
holder, and marks the work lost. Leaving the block without completing releases the claim, which
retires your assignee edge and reopens the item (unless the item went to someone else). The
release carries the claim's epoch, so a handle whose claim lapsed never releases a newer claim
of the item, even one of the same principal and session.

Claims belong to the client's session (``client.session``): a second client of the same
principal claiming the item is refused (:class:`~tenure.LeaseHeld`) like anyone else, and
claiming again from the same session renews the claim.

``claim`` itself stays a plain call returning the frozen :class:`~tenure.work.Claim`: a frozen
model cannot also be a context manager with a heartbeat, so the held form has its own name,
``work`` (SPEC's ``with client.items.claim(id) as work:`` reads
``with client.items.work(id) as work:``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tenure.client import _shared as sh
from tenure.client._shared import Call
from tenure.client.lease import _AsyncHeld, _State, _SyncHeld
from tenure.core.items import Item, ItemView, item_key
from tenure.core.models import ExtendResult, Lease
from tenure.errors import TenureError
from tenure.work import Briefing, Claim, Completion, Dispatch, ItemRelease

if TYPE_CHECKING:
    from tenure.client.aio import AsyncClient
    from tenure.client.sync import Client

# Losses that mean the item is someone else's now: leaving the block does not release it.
ELSEWHERE = frozenset({"taken_over", "not_holder", "stale_token"})


class Items:
    """The work queue, blocking: ``client.items``. Every method is one call of the client."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self,
        title: str,
        body: str | None = None,
        priority: int | None = None,
        labels: builtins.list[str] | tuple[str, ...] | None = None,
        parent: str | None = None,
        id: str | None = None,
    ) -> Item:
        """Add an item (``open``, unassigned); ``id`` defaults to a random ``it-…``."""
        return self._client._call(sh.create_item(title, body, priority, labels, parent, id))

    def get(self, item_id: str) -> ItemView:
        """The item with its lease, lease state and transfers."""
        return self._client._call(sh.get_item(item_id))

    def list(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Item]:
        """Items, filtered by status, assignee and label."""
        return self._client._call(sh.list_items(status, assignee, label, limit))

    def update(
        self,
        item_id: str,
        title: str | None = None,
        body: str | None = None,
        priority: int | None = None,
        labels: builtins.list[str] | tuple[str, ...] | None = None,
        status: str | None = None,
    ) -> ItemView:
        """Edit the fields given; ``status="in_progress"`` claims the item."""
        return self._client._call(sh.update_item(item_id, title, body, priority, labels, status))

    def claim(
        self,
        item_id: str,
        ttl_ms: int | None = None,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
    ) -> Claim:
        """Claim the item for this client's session (no heartbeat: see :meth:`work`); claiming
        it again from the same session renews it. ``claim.lease.token`` is the epoch."""
        call = sh.claim_item(item_id, ttl_ms, task, takeover, reason, self._client.session)
        return self._client._call(call)

    def renew(self, item_id: str, epoch: int | None = None, ttl_ms: int | None = None) -> Lease:
        """Renew your claim's lease (``epoch`` defaults to the item's current one)."""
        return self._client._call(sh.renew_item(item_id, epoch, ttl_ms))

    def extend(
        self,
        item_id: str,
        until: int | datetime | None = None,
        by_ms: int | None = None,
        epoch: int | None = None,
    ) -> ExtendResult:
        """Push your claim's deadline to ``until`` or now + ``by_ms`` (capped, never shorter)."""
        return self._client._call(sh.extend_item(item_id, until, by_ms, epoch))

    def release(self, item_id: str, epoch: int | None = None) -> ItemRelease:
        """End your claim, retire your assignee edge, reopen the item. Idempotent.

        With ``epoch`` only that claim ends (an epoch that is no longer the item's releases
        nothing: ``released`` is false); without, the claim of this client's session."""
        return self._client._call(sh.release_item(item_id, epoch, self._client.session))

    def progress(
        self,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> Item:
        """Report progress, fenced by ``epoch``."""
        return self._client._call(sh.progress_item(item_id, epoch, message, percent, data))

    def complete(
        self, item_id: str, epoch: int, result: Any = None, op_id: str | None = None
    ) -> Completion:
        """Complete the item, fenced by ``epoch``; a repeated ``op_id`` is answered once."""
        return self._client._call(sh.complete_item(item_id, epoch, result, op_id))

    def cancel(self, item_id: str, reason: str) -> Item:
        """Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin)."""
        return self._client._call(sh.cancel_item(item_id, reason))

    def force_release(self, item_id: str, reason: str) -> Claim:
        """End the item's live claim as an authority; the old epoch is dead."""
        return self._client._call(sh.force_release_item(item_id, reason))

    def dispatch(
        self,
        item_id: str,
        agent: str | None = None,
        ttl_ms: int | None = None,
        task: str | None = None,
        session: str | None = None,
    ) -> Dispatch:
        """Create a child agent of yours and claim the item for it; its token comes once.

        The claim belongs to the agent's ``session``, the process that will hold it (default:
        this client's session; ``tenure dispatch`` passes the agent's own)."""
        sid = self._client.session if session is None else session
        return self._client._call(sh.dispatch_item(item_id, agent, ttl_ms, task, sid))

    def queue(self, principal: str | None = None) -> builtins.list[ItemView]:
        """The items of ``principal`` (default: you) and of its agents, with lease state."""
        return self._client._call(sh.queue(principal))

    def ready(self, limit: int = 50) -> builtins.list[Item]:
        """Open, unassigned, unleased items, by priority then age."""
        return self._client._call(sh.ready(limit))

    def briefing(self, ready: int = 5) -> Briefing:
        """What you carry, what lapsed, what happened since your last briefing, what is ready."""
        return self._client._call(sh.briefing(ready))

    def work(
        self,
        item_id: str,
        ttl: float = 30.0,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        on_lost: Callable[[WorkHandle], object] | None = None,
    ) -> WorkHandle:
        """A context manager holding a claim on ``item_id`` with a heartbeat thread.

        See :class:`WorkHandle` and the module's documentation.
        """
        return WorkHandle(self._client, item_id, ttl, task, takeover, reason, on_lost)


class AsyncItems:
    """The work queue for asyncio: ``client.items`` of an :class:`AsyncClient`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create(
        self,
        title: str,
        body: str | None = None,
        priority: int | None = None,
        labels: builtins.list[str] | tuple[str, ...] | None = None,
        parent: str | None = None,
        id: str | None = None,
    ) -> Item:
        """Add an item (``open``, unassigned); ``id`` defaults to a random ``it-…``."""
        return await self._client._call(sh.create_item(title, body, priority, labels, parent, id))

    async def get(self, item_id: str) -> ItemView:
        """The item with its lease, lease state and transfers."""
        return await self._client._call(sh.get_item(item_id))

    async def list(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Item]:
        """Items, filtered by status, assignee and label."""
        return await self._client._call(sh.list_items(status, assignee, label, limit))

    async def update(
        self,
        item_id: str,
        title: str | None = None,
        body: str | None = None,
        priority: int | None = None,
        labels: builtins.list[str] | tuple[str, ...] | None = None,
        status: str | None = None,
    ) -> ItemView:
        """Edit the fields given; ``status="in_progress"`` claims the item."""
        call = sh.update_item(item_id, title, body, priority, labels, status)
        return await self._client._call(call)

    async def claim(
        self,
        item_id: str,
        ttl_ms: int | None = None,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
    ) -> Claim:
        """Claim the item for this client's session (no heartbeat: see :meth:`work`); claiming
        it again from the same session renews it. ``claim.lease.token`` is the epoch."""
        call = sh.claim_item(item_id, ttl_ms, task, takeover, reason, self._client.session)
        return await self._client._call(call)

    async def renew(
        self, item_id: str, epoch: int | None = None, ttl_ms: int | None = None
    ) -> Lease:
        """Renew your claim's lease (``epoch`` defaults to the item's current one)."""
        return await self._client._call(sh.renew_item(item_id, epoch, ttl_ms))

    async def extend(
        self,
        item_id: str,
        until: int | datetime | None = None,
        by_ms: int | None = None,
        epoch: int | None = None,
    ) -> ExtendResult:
        """Push your claim's deadline to ``until`` or now + ``by_ms`` (capped, never shorter)."""
        return await self._client._call(sh.extend_item(item_id, until, by_ms, epoch))

    async def release(self, item_id: str, epoch: int | None = None) -> ItemRelease:
        """End your claim, retire your assignee edge, reopen the item. Idempotent.

        With ``epoch`` only that claim ends (an epoch that is no longer the item's releases
        nothing: ``released`` is false); without, the claim of this client's session."""
        return await self._client._call(sh.release_item(item_id, epoch, self._client.session))

    async def progress(
        self,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> Item:
        """Report progress, fenced by ``epoch``."""
        return await self._client._call(sh.progress_item(item_id, epoch, message, percent, data))

    async def complete(
        self, item_id: str, epoch: int, result: Any = None, op_id: str | None = None
    ) -> Completion:
        """Complete the item, fenced by ``epoch``; a repeated ``op_id`` is answered once."""
        return await self._client._call(sh.complete_item(item_id, epoch, result, op_id))

    async def cancel(self, item_id: str, reason: str) -> Item:
        """Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin)."""
        return await self._client._call(sh.cancel_item(item_id, reason))

    async def force_release(self, item_id: str, reason: str) -> Claim:
        """End the item's live claim as an authority; the old epoch is dead."""
        return await self._client._call(sh.force_release_item(item_id, reason))

    async def dispatch(
        self,
        item_id: str,
        agent: str | None = None,
        ttl_ms: int | None = None,
        task: str | None = None,
        session: str | None = None,
    ) -> Dispatch:
        """Create a child agent of yours and claim the item for it; its token comes once.

        The claim belongs to the agent's ``session``, the process that will hold it (default:
        this client's session; ``tenure dispatch`` passes the agent's own)."""
        sid = self._client.session if session is None else session
        return await self._client._call(sh.dispatch_item(item_id, agent, ttl_ms, task, sid))

    async def queue(self, principal: str | None = None) -> builtins.list[ItemView]:
        """The items of ``principal`` (default: you) and of its agents, with lease state."""
        return await self._client._call(sh.queue(principal))

    async def ready(self, limit: int = 50) -> builtins.list[Item]:
        """Open, unassigned, unleased items, by priority then age."""
        return await self._client._call(sh.ready(limit))

    async def briefing(self, ready: int = 5) -> Briefing:
        """What you carry, what lapsed, what happened since your last briefing, what is ready."""
        return await self._client._call(sh.briefing(ready))

    def work(
        self,
        item_id: str,
        ttl: float = 30.0,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        on_lost: Callable[[AsyncWorkHandle], object] | None = None,
    ) -> AsyncWorkHandle:
        """An async context manager holding a claim on ``item_id`` with a heartbeat task; the
        block is cancelled if the claim is lost. See :class:`AsyncWorkHandle`."""
        return AsyncWorkHandle(self._client, item_id, ttl, task, takeover, reason, on_lost)


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
        return sh.claim_item(self.item_id, ttl_ms, task, self.takeover, self.reason, session)

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
        call = sh.progress_item(self.item_id, self.epoch, message, percent, data)
        try:
            self._item = self._client._call(call)
        except TenureError as err:
            self._fenced_out(err)
            raise
        return self._item

    def complete(self, result: Any = None, op_id: str | None = None) -> Completion:
        """Complete the item with this claim's epoch; the heartbeat stops, nothing is released."""
        call = sh.complete_item(self.item_id, self.epoch, result, op_id)
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
        result = self._client._call(sh.release_item(self.item_id, self.epoch))
        self._released = True
        self._item = result.item
        return result

    def _acquire(self) -> tuple[Lease, float]:
        call = self._claim_call(self.ttl, self.task, self._client.session)
        claim, sent = self._client._timed(call)
        return self._claimed(claim), sent

    def _renew_call(self, token: int) -> Call[Lease]:
        return sh.renew_item(self.item_id, token)

    def _release_call(self, token: int) -> Call[Any]:
        return sh.release_item(self.item_id, token)  # a stale epoch releases nothing

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
        call = sh.progress_item(self.item_id, self.epoch, message, percent, data)
        try:
            self._item = await self._client._call(call)
        except TenureError as err:
            self._fenced_out(err)
            raise
        return self._item

    async def complete(self, result: Any = None, op_id: str | None = None) -> Completion:
        """Complete the item with this claim's epoch; the heartbeat stops, nothing is released."""
        call = sh.complete_item(self.item_id, self.epoch, result, op_id)
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
        result = await self._client._call(sh.release_item(self.item_id, self.epoch))
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
        return sh.renew_item(self.item_id, token)

    def _release_call(self, token: int) -> Call[Any]:
        return sh.release_item(self.item_id, token)  # a stale epoch releases nothing

    def _should_release(self) -> bool:
        return self._work_release()

    def _outcome(self, exc: BaseException | None) -> None:
        if not self._finished:  # a completed item needs its claim no more
            super()._outcome(exc)


__all__ = ["AsyncItems", "AsyncWorkHandle", "Items", "WorkHandle"]
