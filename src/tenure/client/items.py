"""The work queue in the clients: ``client.items``.

``client.items`` (:class:`Items` on :class:`~tenure.client.Client`, :class:`AsyncItems` on
:class:`~tenure.client.AsyncClient`) has the item verbs of the REST API with its field names,
each one call returning a frozen model: :class:`~tenure.core.items.Item`,
:class:`~tenure.core.items.ItemView` (an item with its lease, lease state and transfers), and
:class:`~tenure.core.claims.Claim`, :class:`~tenure.core.claims.Completion` (with the
follow-ups it created), :class:`~tenure.core.claims.ItemRelease`,
:class:`~tenure.core.claims.Dispatch`, :class:`~tenure.core.claims.Briefing` (with the stalled
claims).

The ownership rules hold here as on every front: a force-released claim reads ``revoked`` and
needs ``takeover=True`` with a ``reason`` even for its assignee; ``reassign`` moves an item as an
authority; ``dispatch(..., takeover=True, reason=...)`` dispatches again an item whose agent
died; ``complete(..., follow_ups=[...])`` fans out only from the current epoch, and so does
``create(..., parent=..., parent_epoch=...)``.

``with client.items.work(item_id, ttl=30) as work:`` claims the item and holds the claim with
a heartbeat (:mod:`tenure.client.work`): leaving the block without completing releases the
claim (with its epoch), which retires your assignee edge and reopens the item.

Claims belong to the client's session (``client.session``): a second client of the same
principal claiming the item is refused (:class:`~tenure.LeaseHeld`) like anyone else, and
claiming again from the same session renews the claim.

``claim`` itself stays a plain call returning the frozen :class:`~tenure.core.claims.Claim`:
a frozen model cannot also be a context manager with a heartbeat, so the held form has its own
name, ``work`` (``with client.items.claim(id) as work:`` reads
``with client.items.work(id) as work:``).
"""

from tenure.client._items import Items
from tenure.client._items_aio import AsyncItems
from tenure.client.work import AsyncWorkHandle, WorkHandle

__all__ = ["AsyncItems", "AsyncWorkHandle", "Items", "WorkHandle"]
