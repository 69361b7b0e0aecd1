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

from tenure.client._handles import WorkHandle
from tenure.client._handles_aio import AsyncWorkHandle

__all__ = ["AsyncWorkHandle", "WorkHandle"]
