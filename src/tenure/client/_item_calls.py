"""The pure half of the work queue in the clients: what to send for each item verb, and what
its reply means (the item half of :mod:`tenure.client._shared`, whose retry rules apply).

Each request is built from the verb's entry in the table (:mod:`tenure.verbs.items`), whose
``parse`` reads the reply and whose ``repeatable`` holds the retry rules: reads, ``renew``,
``extend``, ``progress``, an edit that does not claim, a release *with* an epoch and a
completion *with* an ``op_id`` (its follow-ups are created once per ``op_id``) are repeated
after any transient failure; ``create``, ``claim``, ``dispatch``, ``reassign``, ``cancel``,
``force_release``, an edit to ``in_progress``, a briefing (it moves the caller's cursor), a
release without an epoch and a completion without an ``op_id`` only when the request provably
never reached the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tenure.client._shared import Call, Page, _listed, to_millis, verb_call
from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.items import Item, ItemView
from tenure.core.models import ExtendResult, Lease
from tenure.verbs import items as iv

#: a follow-up of a completion: ``{"title", "body"?, "priority"?, "labels"?, "id"?}``, or its
#: title alone
FollowUp = Mapping[str, Any] | str


# requests -----------------------------------------------------------------------------------
def _labels(labels: list[str] | tuple[str, ...] | None) -> Any:
    return None if labels is None else _listed(labels)


def _takeover(takeover: bool) -> bool | None:
    return None if takeover is False else takeover


def create_item(
    title: str,
    body: str | None = None,
    priority: int | None = None,
    labels: list[str] | tuple[str, ...] | None = None,
    parent: str | None = None,
    id: str | None = None,
    parent_epoch: int | None = None,
) -> Call[Item]:
    """``parent_epoch``: created only while it is the parent's current epoch, held by the
    caller (fenced like progress)."""
    return verb_call(
        iv.CREATE_ITEM, id=id, title=title, body=body, priority=priority, labels=_labels(labels),
        parent=parent, parent_epoch=parent_epoch,
    )  # fmt: skip


def get_item(item_id: str) -> Call[ItemView]:
    return verb_call(iv.GET_ITEM, id=item_id)


def list_items(
    status: str | None = None,
    assignee: str | None = None,
    label: str | None = None,
    limit: int = 100,
    after: str | None = None,
) -> Call[Page[Item]]:
    """A page of item summaries (``body`` empty, ``result`` None: ``get_item`` has them)."""
    call = verb_call(
        iv.LIST_ITEMS, status=status, assignee=assignee, label=label, limit=limit, after=after
    )
    return replace(call, parse=items_page_reply)


def update_item(
    item_id: str,
    title: str | None = None,
    body: str | None = None,
    priority: int | None = None,
    labels: list[str] | tuple[str, ...] | None = None,
    status: str | None = None,
) -> Call[ItemView]:
    return verb_call(
        iv.UPDATE_ITEM, id=item_id, title=title, body=body, priority=priority,
        labels=_labels(labels), status=status,
    )  # fmt: skip


def claim_item(
    item_id: str,
    ttl_ms: int | None = None,
    task: str | None = None,
    takeover: bool = False,
    reason: str | None = None,
    session: str | None = None,
) -> Call[Claim]:
    return verb_call(
        iv.CLAIM_ITEM, id=item_id, ttl_ms=ttl_ms, task=task, takeover=_takeover(takeover),
        reason=reason, session=session,
    )  # fmt: skip


def renew_item(item_id: str, epoch: int | None = None, ttl_ms: int | None = None) -> Call[Lease]:
    return verb_call(iv.RENEW_ITEM, id=item_id, epoch=epoch, ttl_ms=ttl_ms)


def extend_item(
    item_id: str,
    until: int | datetime | None = None,
    by_ms: int | None = None,
    epoch: int | None = None,
) -> Call[ExtendResult]:
    until_ms = to_millis(until)
    return verb_call(iv.EXTEND_ITEM, id=item_id, epoch=epoch, until=until_ms, by_ms=by_ms)


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
    return verb_call(
        iv.RELEASE_ITEM, id=item_id, epoch=epoch, session=session, reason=reason,
        exit_status=exit_status,
    )  # fmt: skip


def progress_item(
    item_id: str,
    epoch: int,
    message: str,
    percent: int | None = None,
    data: dict[str, Any] | None = None,
) -> Call[Item]:
    # A repeat reports the same progress again: harmless.
    return verb_call(
        iv.PROGRESS_ITEM, id=item_id, epoch=epoch, message=message, percent=percent, data=data
    )


def complete_item(
    item_id: str,
    epoch: int,
    result: Any = None,
    op_id: str | None = None,
    follow_ups: Sequence[FollowUp] | None = None,
) -> Call[Completion]:
    """``follow_ups``: the items the completion creates under this one, in its transaction
    (once per ``op_id``: a repeat answers the first completion with its follow-ups)."""
    sent = None if follow_ups is None else follow_ups_body(follow_ups)
    call = verb_call(iv.COMPLETE_ITEM, id=item_id, epoch=epoch, op_id=op_id, follow_ups=sent)
    return replace(call, body={"epoch": epoch, "result": result, **(call.body or {})})


def cancel_item(item_id: str, reason: str) -> Call[Item]:
    return verb_call(iv.CANCEL_ITEM, id=item_id, reason=reason)


def force_release_item(item_id: str, reason: str) -> Call[Claim]:
    return verb_call(iv.FORCE_RELEASE_ITEM, id=item_id, reason=reason)


def follow_ups_body(follow_ups: Sequence[FollowUp]) -> Any:
    """The ``follow_ups`` to send: a title alone stands for ``{"title": title}``; anything else
    goes as it is, for the server to name what is wrong with it."""
    if isinstance(follow_ups, str | bytes) or not isinstance(follow_ups, Sequence):
        return follow_ups
    return [{"title": f} if isinstance(f, str) else _as_plain(f) for f in follow_ups]


def _as_plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _listed(v) if k == "labels" else v for k, v in value.items()}
    return value


def dispatch_item(
    item_id: str,
    agent: str | None = None,
    ttl_ms: int | None = None,
    task: str | None = None,
    session: str | None = None,
    takeover: bool = False,
    reason: str | None = None,
) -> Call[Dispatch]:
    return verb_call(
        iv.DISPATCH_ITEM, id=item_id, agent=agent, ttl_ms=ttl_ms, task=task, session=session,
        takeover=_takeover(takeover), reason=reason,
    )  # fmt: skip


def reassign_item(item_id: str, to: str, reason: str) -> Call[Item]:
    """Move the item to ``to`` as an authority: any live claim ends, the edge moves."""
    return verb_call(iv.REASSIGN_ITEM, id=item_id, to=to, reason=reason)


def queue(principal: str | None = None) -> Call[list[ItemView]]:
    if principal is None:
        return verb_call(iv.MY_QUEUE)
    return verb_call(iv.QUEUE_OF, principal=principal)


def ready(limit: int = 50) -> Call[list[Item]]:
    return replace(verb_call(iv.READY_ITEMS, limit=limit), parse=items_reply)


def ready_view(limit: int = 50) -> Call[ReadyView]:
    return verb_call(iv.READY_ITEMS, limit=limit)


def briefing(ready: int = 5) -> Call[Briefing]:
    return verb_call(iv.BRIEFING, ready=ready)


# replies: the item verbs' own are in tenure.verbs.item_replies --------------------------------
def items_reply(data: Any) -> list[Item]:
    return [Item.from_wire(x) for x in data["items"]]


def items_page_reply(data: Any) -> Page[Item]:
    return Page(items_reply(data), data.get("next"), bool(data.get("truncated")))
