"""What the clients send for the few item verbs whose request says more than the verb's entry
(:mod:`tenure.verbs.items`): a release by epoch or by session, a queue by principal or one's
own, the ready list read as items. Every other item verb's request is its entry's
(``iv.CLAIM_ITEM.call(id=..., ...)``), whose ``parse`` reads the reply and whose ``repeatable``
holds the retry rules: reads, ``renew``, ``extend``, ``progress``, an edit that does not claim,
a release *with* an epoch and a completion *with* an ``op_id`` (its follow-ups are created once
per ``op_id``) are repeated after any transient failure; ``create``, ``claim``, ``dispatch``,
``reassign``, ``cancel``, ``force_release``, an edit to ``in_progress``, a briefing (it moves
the caller's cursor), a release without an epoch and a completion without an ``op_id`` only when
the request provably never reached the server.
"""

from __future__ import annotations

from tenure.client._wire import Call, reparse
from tenure.core.claims import ItemRelease
from tenure.core.items import Item, ItemView
from tenure.verbs import items as iv
from tenure.verbs.item_inputs import FollowUp as FollowUp
from tenure.verbs.item_replies import items_reply


def release_item(
    item_id: str,
    epoch: int | None = None,
    session: str | None = None,
    reason: str | None = None,
    exit_status: int | None = None,
) -> Call[ItemRelease]:
    """With ``epoch``: only that claim (a stale epoch releases nothing); without: the claim of
    ``session``. With an epoch a repeat changes nothing, so it is safe to retry. ``reason``
    and ``exit_status``: why (``command_exited``), recorded with the release."""
    session = session if epoch is None else None
    return iv.RELEASE_ITEM.call(
        id=item_id, epoch=epoch, session=session, reason=reason, exit_status=exit_status
    )


def queue(principal: str | None = None) -> Call[list[ItemView]]:
    if principal is None:
        return iv.MY_QUEUE.call()
    return iv.QUEUE_OF.call(principal=principal)


def ready(limit: int = 50) -> Call[list[Item]]:
    return reparse(iv.READY_ITEMS.call(limit=limit), items_reply)
