"""What a work handle knows besides its lease, with no I/O: the item, the claim, the
completion, and whether leaving should release the claim (:class:`_Work`). The handles are in
:mod:`tenure.client._handles` and :mod:`tenure.client._handles_aio`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenure.client import _item_requests as ic
from tenure.client._call import Call
from tenure.client._lease_state import C, _Handle
from tenure.core.claims import Claim, Completion
from tenure.core.items import Item, item_key
from tenure.core.models import Lease
from tenure.errors import TenureError
from tenure.verbs import items as iv

# Losses that mean the item is someone else's now, or an authority's to decide: leaving the
# block does not release it. A force-released claim keeps its (revoked) edge: the authority
# reassigns it, or someone takes it over with a reason. A revoked token releases nothing.
ELSEWHERE = frozenset(
    {"taken_over", "not_holder", "stale_token", "force_released", "unauthenticated"}
)


class _Work(_Handle[C]):
    """The item's side of a work handle; mixed in before the heartbeat of its client."""

    def __init__(
        self,
        client: C,
        item_id: str,
        ttl: float = 30.0,
        task: str | None = None,
        takeover: bool = False,
        reason: str | None = None,
        on_lost: Callable[[Any], object] | None = None,
    ) -> None:
        super().__init__(client, item_key(item_id), ttl, task, on_lost=on_lost)
        self.item_id = item_id
        self.takeover = takeover
        self.reason = reason
        self._claim: Claim | None = None
        self._item: Item | None = None
        self._completion: Completion | None = None
        self._elsewhere = False  # a fenced write said the item has another owner now

    def _claim_call(self, ttl: float, task: str | None, session: str) -> Call[Claim]:
        ttl_ms = max(1, round(ttl * 1000))
        return iv.CLAIM_ITEM.call(
            id=self.item_id, ttl_ms=ttl_ms, task=task, takeover=self.takeover, reason=self.reason,
            session=session,
        )  # fmt: skip

    def _claimed(self, claim: Claim) -> Lease:
        self._claim, self._item = claim, claim.item
        return claim.lease

    @property
    def epoch(self) -> int:
        """The claim's epoch (its lease's token): what progress and completion are fenced by."""
        return self._held().token

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

    def _renew_call(self, token: int) -> Call[Lease]:
        return iv.RENEW_ITEM.call(id=self.item_id, epoch=token)

    def _release_call(self, token: int) -> Call[Any]:
        return ic.release_item(self.item_id, token)  # a stale epoch releases nothing

    def _should_release(self) -> bool:
        """Whether leaving should release the claim (see :mod:`tenure.client.work`)."""
        if self._released or self._finished or self._elsewhere:
            return False
        return self._state.reason not in ELSEWHERE

    def _outcome(self, exc: BaseException | None) -> None:
        if not self._finished:  # a completed item needs its claim no more
            super()._outcome(exc)

    def _fenced_out(self, err: TenureError) -> None:
        """A fenced write refused for the epoch: the claim is someone else's now. The block has
        the exception already: an async heartbeat does not cancel it on top."""
        if err.code == "stale_token":
            self._elsewhere = True
            self._spare_host = True
            self._state.mark(err.code, err)
            self._reported = True
