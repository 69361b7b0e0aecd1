# generated from _items_aio.py by python scripts/gen_sync.py; do not edit
"""The work queue of a :class:`~tenure.client.Client`: :class:`Items` (``client.items``);
see :mod:`tenure.client.items`."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from tenure.client import _item_requests as ic
from tenure.client._call import Call
from tenure.client._fences import Admits
from tenure.client._handles import WorkHandle
from tenure.client._held import Caller
from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.items import Item, ItemView
from tenure.core.models import ExtendResult, Lease
from tenure.verbs import items as iv
from tenure.verbs.item_inputs import FollowUp


class Items:
    """The work queue, blocking: ``client.items`` of an
    :class:`~tenure.client.Client`. Every method is one call of the client."""

    def __init__(self, client: Caller) -> None:
        self._client = client

    def create(
        self,
        title: str,
        body: str | None = None,
        priority: int | None = None,
        labels: builtins.list[str] | tuple[str, ...] | None = None,
        parent: str | None = None,
        id: str | None = None,
        parent_epoch: int | None = None,
    ) -> Item:
        """Add an item (``open``, unassigned); ``id`` defaults to a random ``it-…``.

        With ``parent_epoch`` (and ``parent``), the item is created only while that is the
        parent's current epoch and your claim holds it: a superseded owner of the parent gets
        :class:`~tenure.StaleToken` and creates nothing."""
        call = iv.CREATE_ITEM.call(
            id=id, title=title, body=body, priority=priority, labels=labels, parent=parent,
            parent_epoch=parent_epoch,
        )  # fmt: skip
        return self._client._call(call)

    def get(self, item_id: str) -> ItemView:
        """The item with its lease, lease state and transfers."""
        return self._client._call(iv.GET_ITEM.call(id=item_id))

    def list(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Item]:
        """Items, filtered by status, assignee and label, as summaries: ``body`` empty and
        ``result`` None (:meth:`get` has them). The pages the server cut short are fetched."""
        found: builtins.list[Item] = []
        after = None
        while True:
            size = limit - len(found)
            call = iv.LIST_ITEMS.call(
                status=status, assignee=assignee, label=label, limit=size, after=after
            )
            page = self._client._call(call)
            found += page.entries
            if not page.more or len(found) >= limit:
                return found
            after = page.next

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
        call = iv.UPDATE_ITEM.call(
            id=item_id, title=title, body=body, priority=priority, labels=labels, status=status
        )
        return self._client._call(call)

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
        call = iv.CLAIM_ITEM.call(
            id=item_id, ttl_ms=ttl_ms, task=task, takeover=takeover, reason=reason,
            session=self._client.session,
        )  # fmt: skip
        return self._client._call(call)

    def renew(self, item_id: str, epoch: int | None = None, ttl_ms: int | None = None) -> Lease:
        """Renew your claim's lease (``epoch`` defaults to the item's current one)."""
        return self._client._call(iv.RENEW_ITEM.call(id=item_id, epoch=epoch, ttl_ms=ttl_ms))

    def extend(
        self,
        item_id: str,
        until: int | datetime | None = None,
        by_ms: int | None = None,
        epoch: int | None = None,
    ) -> ExtendResult:
        """Push your claim's deadline to ``until`` or now + ``by_ms`` (capped, never shorter)."""
        call = iv.EXTEND_ITEM.call(id=item_id, until=until, by_ms=by_ms, epoch=epoch)
        return self._client._call(call)

    def release(
        self,
        item_id: str,
        epoch: int | None = None,
        reason: str | None = None,
        exit_status: int | None = None,
    ) -> ItemRelease:
        """End your claim, retire your assignee edge, reopen the item. Idempotent.

        With ``epoch`` only that claim ends (an epoch that is no longer the item's releases
        nothing: ``released`` is false); without, the claim of this client's session.
        ``reason="command_exited"`` with ``exit_status`` records why (a supervised command
        exited without completing the item) on the transfer and the events."""
        call = ic.release_item(item_id, epoch, self._client.session, reason, exit_status)
        return self._client._call(call)

    def progress(
        self,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> Item:
        """Report progress, fenced by ``epoch``."""
        call = iv.PROGRESS_ITEM.call(
            id=item_id, epoch=epoch, message=message, percent=percent, data=data
        )
        return self._client._call(call)

    def complete(
        self,
        item_id: str,
        epoch: int,
        result: Any = None,
        op_id: str | None = None,
        follow_ups: Sequence[FollowUp] | None = None,
    ) -> Completion:
        """Complete the item, fenced by ``epoch``; a repeated ``op_id`` is answered once.

        ``follow_ups`` (``{"title", "body"?, "priority"?, "labels"?, "id"?}`` each, or a title
        alone) are created under this item in the completion's transaction, exactly once per
        ``op_id``; ``completion.follow_ups`` are the items created."""
        call = iv.COMPLETE_ITEM.call(
            id=item_id, epoch=epoch, result=result, op_id=op_id, follow_ups=follow_ups
        )
        return self._client._call(call)

    def cancel(self, item_id: str, reason: str) -> Item:
        """Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin)."""
        return self._client._call(iv.CANCEL_ITEM.call(id=item_id, reason=reason))

    def reopen(self, item_id: str, reason: str) -> Item:
        """Reopen a parked item (its claims failed the policy's ``max_attempts`` times): open
        and nobody's again, its attempts reset; recorded with ``reason``."""
        return self._client._call(iv.REOPEN_ITEM.call(id=item_id, reason=reason))

    def force_release(self, item_id: str, reason: str) -> Claim:
        """End the item's live claim as an authority (admin, supervisor, or an ancestor of
        its holder); the old epoch is dead, and the assignee keeps the item but reads
        ``revoked``: even it needs ``takeover=True`` with a reason to claim it again."""
        return self._client._call(iv.FORCE_RELEASE_ITEM.call(id=item_id, reason=reason))

    def reassign(self, item_id: str, to: str, reason: str) -> Item:
        """Move the item to ``to`` as an authority (admin, supervisor, or an ancestor of the
        assignee): any live claim ends and its epoch is dead, the assignee edge moves, in one
        transaction (a ``reassigned`` transfer). ``to`` then claims it without a takeover."""
        return self._client._call(iv.REASSIGN_ITEM.call(id=item_id, to=to, reason=reason))

    def dispatch(
        self,
        item_id: str,
        agent: str | None = None,
        ttl_ms: int | None = None,
        task: str | None = None,
        session: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
    ) -> Dispatch:
        """Create a child agent of yours and claim the item for it; its token comes once.

        The claim belongs to the agent's ``session``, the process that will hold it (default:
        this client's session; ``tenure dispatch`` passes the agent's own). ``takeover=True``
        with a ``reason`` dispatches again an item whose claim lapsed (its supervisor died),
        was revoked or stalled, when it is yours, one of your agents', or one you may
        force-release."""
        sid = self._client.session if session is None else session
        call = iv.DISPATCH_ITEM.call(
            id=item_id, agent=agent, ttl_ms=ttl_ms, task=task, session=sid, takeover=takeover,
            reason=reason,
        )  # fmt: skip
        return self._client._call(call)

    def queue(self, principal: str | None = None) -> builtins.list[ItemView]:
        """The items of ``principal`` (default: you) and of its agents, with lease state."""
        return self._client._call(ic.queue(principal))

    def ready(self, limit: int = 50) -> builtins.list[Item]:
        """Open, unassigned, unleased items, by priority then age."""
        return self._client._call(ic.ready(limit))

    def ready_view(self, limit: int = 50) -> ReadyView:
        """The ready items (``items``), then the claims that lapsed (``lapsed``: work whose
        holder stopped, to take over with ``takeover=True`` and a reason), ``limit`` of each."""
        view: Call[ReadyView] = iv.READY_ITEMS.call(limit=limit)  # its reply's own reading
        return self._client._call(view)

    def briefing(self, ready: int = 5) -> Briefing:
        """What you carry, what lapsed, what happened since your last briefing, what is ready."""
        return self._client._call(iv.BRIEFING.call(ready=ready))

    def work(
        self,
        item_id: str,
        ttl: float = 30.0,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        on_lost: Callable[[WorkHandle], object] | None = None,
        fences: Iterable[Admits] | None = None,
    ) -> WorkHandle:
        """An async context manager holding a claim on ``item_id`` with a heartbeat thread.

        See :class:`WorkHandle`.
        ``fences`` admit the claim's epoch for ``items/<id>`` as soon as it is granted.
        """
        return WorkHandle(
            self._client, item_id, ttl, task, takeover, reason, on_lost, fences=fences
        )
