"""The pure half of the work queue in the clients: what to send for each item verb, and what
its reply means (the item half of :mod:`tenure.client._shared`, whose retry rules apply).

Retry safety of the item verbs: reads, ``renew``, ``extend``, ``progress``, a release *with*
an epoch and a completion *with* an ``op_id`` (its follow-ups are created once per ``op_id``)
are repeated after any transient failure; ``create``, ``claim``, ``dispatch``, ``reassign``,
``cancel``, ``force_release``, a release without an epoch and a completion without an
``op_id`` only when the request provably never reached the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tenure.client._shared import (
    Call,
    Page,
    Safety,
    _drop_none,
    _listed,
    event_from,
    extend_reply,
    lease_from,
    lease_reply,
    segment,
    to_millis,
)
from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.items import Item, ItemView, Transfer
from tenure.core.models import ExtendResult, Lease, Principal

#: a follow-up of a completion: ``{"title", "body"?, "priority"?, "labels"?, "id"?}``, or its
#: title alone
FollowUp = Mapping[str, Any] | str


# requests -----------------------------------------------------------------------------------
def _item_path(item_id: str, verb: str = "") -> tuple[str, dict[str, Any]]:
    path = f"/v1/items/{segment(item_id, 'id')}"
    return (f"{path}/{verb}" if verb else path), {"id": item_id}


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
    fields = _drop_none(
        id=id,
        title=title,
        body=body,
        priority=priority,
        labels=None if labels is None else _listed(labels),
        parent=parent,
        parent_epoch=parent_epoch,
    )
    return Call("create_item", "POST", "/v1/items", item_reply, fields, safety=Safety.UNSAFE)


def get_item(item_id: str) -> Call[ItemView]:
    path, args = _item_path(item_id)
    return Call("get_item", "GET", path, item_view_from, path_args=args)


def list_items(
    status: str | None = None,
    assignee: str | None = None,
    label: str | None = None,
    limit: int = 100,
    after: str | None = None,
) -> Call[Page[Item]]:
    """A page of item summaries (``body`` empty, ``result`` None: ``get_item`` has them)."""
    params = _drop_none(status=status, assignee=assignee, label=label, limit=limit, after=after)
    return Call("list_items", "GET", "/v1/items", items_page_reply, params=params)


def update_item(
    item_id: str,
    title: str | None = None,
    body: str | None = None,
    priority: int | None = None,
    labels: list[str] | tuple[str, ...] | None = None,
    status: str | None = None,
) -> Call[ItemView]:
    path, args = _item_path(item_id)
    fields = _drop_none(
        title=title,
        body=body,
        priority=priority,
        labels=None if labels is None else _listed(labels),
        status=status,
    )
    # Setting in_progress claims, which is no more repeatable than claim itself.
    safety = Safety.UNSAFE if status == "in_progress" else Safety.IDEMPOTENT
    return Call("update_item", "PATCH", path, item_view_from, fields, path_args=args, safety=safety)


def claim_item(
    item_id: str,
    ttl_ms: int | None = None,
    task: str | None = None,
    takeover: bool = False,
    reason: str | None = None,
    session: str | None = None,
) -> Call[Claim]:
    path, args = _item_path(item_id, "claim")
    fields = _drop_none(
        ttl_ms=ttl_ms, task=task, takeover=None if takeover is False else takeover, reason=reason,
        session=session,
    )  # fmt: skip
    return Call(
        "claim_item", "POST", path, claim_reply, fields, path_args=args, safety=Safety.UNSAFE
    )


def renew_item(item_id: str, epoch: int | None = None, ttl_ms: int | None = None) -> Call[Lease]:
    path, args = _item_path(item_id, "renew")
    fields = _drop_none(epoch=epoch, ttl_ms=ttl_ms)
    return Call("renew_item", "POST", path, lease_reply, fields, path_args=args)


def extend_item(
    item_id: str,
    until: int | datetime | None = None,
    by_ms: int | None = None,
    epoch: int | None = None,
) -> Call[ExtendResult]:
    path, args = _item_path(item_id, "extend")
    fields = _drop_none(epoch=epoch, until=to_millis(until), by_ms=by_ms)
    return Call("extend_item", "POST", path, extend_reply, fields, path_args=args)


def release_item(
    item_id: str, epoch: int | None = None, session: str | None = None
) -> Call[ItemRelease]:
    """With ``epoch``: only that claim (a stale epoch releases nothing); without: the claim of
    ``session``. With an epoch a repeat changes nothing, so it is safe to retry."""
    path, args = _item_path(item_id, "release")
    fields = _drop_none(epoch=epoch, session=session if epoch is None else None)
    safety = Safety.UNSAFE if epoch is None else Safety.IDEMPOTENT
    return Call(
        "release_item", "POST", path, item_release_reply, fields, path_args=args, safety=safety
    )


def progress_item(
    item_id: str,
    epoch: int,
    message: str,
    percent: int | None = None,
    data: dict[str, Any] | None = None,
) -> Call[Item]:
    path, args = _item_path(item_id, "progress")
    fields = _drop_none(epoch=epoch, message=message, percent=percent, data=data)
    # A repeat reports the same progress again: harmless.
    return Call("progress_item", "POST", path, item_reply, fields, path_args=args)


def complete_item(
    item_id: str,
    epoch: int,
    result: Any = None,
    op_id: str | None = None,
    follow_ups: Sequence[FollowUp] | None = None,
) -> Call[Completion]:
    """``follow_ups``: the items the completion creates under this one, in its transaction
    (once per ``op_id``: a repeat answers the first completion with its follow-ups)."""
    path, args = _item_path(item_id, "complete")
    fields: dict[str, Any] = {"epoch": epoch, "result": result}
    if op_id is not None:
        fields["op_id"] = op_id
    if follow_ups is not None:
        fields["follow_ups"] = follow_ups_body(follow_ups)
    safety = Safety.UNSAFE if op_id is None else Safety.IDEMPOTENT
    return Call(
        "complete_item", "POST", path, completion_reply, fields, path_args=args, safety=safety
    )


def cancel_item(item_id: str, reason: str) -> Call[Item]:
    path, args = _item_path(item_id, "cancel")
    body = {"reason": reason}
    return Call("cancel_item", "POST", path, item_reply, body, path_args=args, safety=Safety.UNSAFE)


def force_release_item(item_id: str, reason: str) -> Call[Claim]:
    path, args = _item_path(item_id, "force-release")
    return Call(
        "force_release_item", "POST", path, claim_reply, {"reason": reason}, path_args=args,
        safety=Safety.UNSAFE,
    )  # fmt: skip


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
    path, args = _item_path(item_id, "dispatch")
    fields = _drop_none(
        agent=agent, ttl_ms=ttl_ms, task=task, session=session,
        takeover=None if takeover is False else takeover, reason=reason,
    )  # fmt: skip
    return Call(
        "dispatch_item", "POST", path, dispatch_reply, fields, path_args=args, safety=Safety.UNSAFE
    )


def reassign_item(item_id: str, to: str, reason: str) -> Call[Item]:
    """Move the item to ``to`` as an authority: any live claim ends, the edge moves."""
    path, args = _item_path(item_id, "reassign")
    body = {"to": to, "reason": reason}
    return Call(
        "reassign_item", "POST", path, item_reply, body, path_args=args, safety=Safety.UNSAFE
    )


def queue(principal: str | None = None) -> Call[list[ItemView]]:
    if principal is None:
        return Call("queue", "GET", "/v1/queue", item_views_reply)
    path = f"/v1/queue/{segment(principal, 'principal')}"
    return Call("queue", "GET", path, item_views_reply, path_args={"principal": principal})


def ready(limit: int = 50) -> Call[list[Item]]:
    return Call("ready", "GET", "/v1/ready", items_reply, params={"limit": limit})


def ready_view(limit: int = 50) -> Call[ReadyView]:
    return Call("ready_view", "GET", "/v1/ready", ready_view_reply, params={"limit": limit})


def briefing(ready: int = 5) -> Call[Briefing]:
    # Not repeated after an ambiguous failure: a briefing moves the caller's cursor, so a
    # repeat would answer "nothing happened" for what the lost reply carried.
    return Call(
        "briefing", "GET", "/v1/briefing", briefing_reply, params={"ready": ready},
        safety=Safety.UNSAFE,
    )  # fmt: skip


# replies ------------------------------------------------------------------------------------
SUMMARY_DEFAULTS: dict[str, Any] = {"body": "", "result": None}
ITEM_FIELDS = (
    "id", "title", "body", "status", "priority", "parent", "assignee", "epoch", "progress",
    "progress_at", "result", "created_by", "created_at", "updated_at",
)  # fmt: skip


def item_from(data: Any) -> Item:
    """The item of a reply; a list's summary has no ``body`` or ``result`` (empty here)."""
    values = {name: data.get(name, SUMMARY_DEFAULTS.get(name)) for name in ITEM_FIELDS}
    return Item(**values, labels=tuple(data["labels"]), revoked=bool(data.get("revoked", False)))


def item_reply(data: Any) -> Item:
    return item_from(data["item"])


def items_reply(data: Any) -> list[Item]:
    return [item_from(x) for x in data["items"]]


def items_page_reply(data: Any) -> Page[Item]:
    return Page(items_reply(data), data.get("next"), bool(data.get("truncated")))


def transfer_from(data: Any) -> Transfer:
    return Transfer(
        data["item"],
        data["from"],
        data["to"],
        data["epoch"],
        data["reason"],
        data["actor"],
        data["at"],
        data.get("note"),
    )


def item_view_from(data: Any) -> ItemView:
    lease = data.get("lease")
    return ItemView(
        item_from(data["item"]),
        None if lease is None else lease_from(lease),
        data["lease_state"],
        tuple(transfer_from(x) for x in data.get("transfers") or ()),
    )


def item_views_reply(data: Any) -> list[ItemView]:
    return [item_view_from(x) for x in data["items"]]


def ready_view_reply(data: Any) -> ReadyView:
    lapsed = tuple(item_view_from(x) for x in data.get("lapsed") or ())
    return ReadyView(tuple(item_from(x) for x in data["items"]), lapsed)


def claim_reply(data: Any) -> Claim:
    return Claim(item_from(data["item"]), lease_from(data["lease"]))


def completion_reply(data: Any) -> Completion:
    follow_ups = tuple(item_from(x) for x in data.get("follow_ups") or ())
    return Completion(item_from(data["item"]), bool(data["duplicate"]), follow_ups)


def item_release_reply(data: Any) -> ItemRelease:
    return ItemRelease(bool(data["released"]), item_from(data["item"]))


def dispatch_reply(data: Any) -> Dispatch:
    agent = data["agent"]
    principal = Principal(
        agent["name"], agent.get("kind", "agent"), tuple(agent.get("roles") or ()),
        agent.get("parent"),
    )  # fmt: skip
    return Dispatch(item_from(data["item"]), lease_from(data["lease"]), principal, agent["token"])


def briefing_reply(data: Any) -> Briefing:
    return Briefing(
        data["principal"],
        tuple(item_view_from(x) for x in data["carrying"]),
        tuple(item_view_from(x) for x in data["lapsed"]),
        tuple(event_from(x) for x in data["happened"]),
        tuple(item_from(x) for x in data["ready"]),
        tuple(item_view_from(x) for x in data.get("stalled") or ()),
    )
