"""The item and claim verbs (the work queue): their entries in the verb table.

Every rule (who may claim, takeover, fencing by epoch, cancel rights, dispatch) lives in
:mod:`tenure.service.queue` and :mod:`tenure.core.items`; an entry only moves values between the
wire and the :class:`~tenure.service.queue.WorkQueue`. The inputs are in
:mod:`tenure.verbs.item_inputs`, the replies in :mod:`tenure.verbs.item_replies`. A verb on one
item has its id in the path (``/v1/items/{id}/claim``): its ``input`` is the body's fields
(``body``) and the ``id``. Lists carry summaries within the server's list budget
(:mod:`tenure.verbs.summaries`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.items import Item, ItemQuery, ItemView
from tenure.core.models import ExtendResult, Lease, Principal
from tenure.core.validate import MAX_LIMIT
from tenure.verbs import call as c
from tenure.verbs import item_replies as ir
from tenure.verbs import wire as w
from tenure.verbs.item_inputs import (
    BriefingIn,
    CancelIn,
    ClaimIn,
    CompleteIn,
    DispatchIn,
    ForceReleaseItemIn,
    ItemExtendIn,
    ItemIn,
    ItemPatch,
    ItemReleaseIn,
    ItemRenewIn,
    ListItemsIn,
    NoInput,
    OnItem,
    ProgressIn,
    QueueOfIn,
    ReadyIn,
    ReassignIn,
    follow_ups_body,
)
from tenure.verbs.leases import lease_of_reply, lease_reply
from tenure.verbs.replies import ExtendReply, LeaseReply
from tenure.verbs.summaries import decode_cursor, items_page, views_page
from tenure.verbs.table import Services, Verb, Wire, never


# what each verb runs ------------------------------------------------------------------------
def given(**values: Any) -> dict[str, Any]:
    """The fields the caller sent: ``null`` means absent, as everywhere in the API."""
    return {k: v for k, v in values.items() if v is not None}


def _create(s: Services, me: Principal, a: ItemIn) -> Item:
    fields = given(
        id=a.id, body=a.body, priority=a.priority, labels=a.labels, parent=a.parent,
        parent_epoch=a.parent_epoch,
    )  # fmt: skip
    return s.items.create(me, a.title, **fields)


def _list(s: Services, me: Principal, a: ListItemsIn) -> Wire:
    query = ItemQuery(a.status, a.assignee, a.label, a.limit, decode_cursor(a.after))
    found = s.items.summaries(query)
    return items_page(found, a.limit, s.limits.list_bytes)


def _update(s: Services, me: Principal, a: ItemPatch) -> ItemView:
    changes = given(**{name: getattr(a, name) for name in a.model_fields_set if name != "id"})
    return s.items.update(me, a.id, **changes)


def _claim(s: Services, me: Principal, a: ClaimIn) -> Claim:
    takeover = bool(a.takeover)
    return s.items.claim(me, a.id, a.ttl_ms, a.task, takeover, a.reason, a.session)


def _complete(s: Services, me: Principal, a: CompleteIn) -> Completion:
    follow_ups = _plain(a.follow_ups)
    return s.items.complete(me, a.id, a.epoch, a.result, a.op_id, follow_ups=follow_ups)


def _plain(follow_ups: Any) -> Any:
    """Parsed follow-ups as the service takes them; anything else (direct mode's unchecked
    arguments) as it is, for the service to name what is wrong with it."""
    if not isinstance(follow_ups, list):
        return follow_ups
    return [f.model_dump(exclude_none=True) if isinstance(f, BaseModel) else f for f in follow_ups]


def _dispatch(s: Services, me: Principal, a: DispatchIn) -> Dispatch:
    return s.items.dispatch(
        me, a.id, a.agent, a.ttl_ms, a.task, a.session, takeover=bool(a.takeover),
        reason=a.reason,
    )  # fmt: skip


def _ready(s: Services, me: Principal, a: ReadyIn) -> Wire:
    budget = s.limits.list_bytes
    page = items_page(s.items.ready_summaries(a.limit), MAX_LIMIT + 1, budget)
    lapsed = views_page(s.items.lapsed(a.limit), budget)
    truncated = page["truncated"] or lapsed["truncated"]
    return {**page, "lapsed": lapsed["items"], "truncated": truncated, "next": None}


def item_wire(item: Item) -> Wire:
    return {"item": item.to_dict()}


def item_of_reply(data: Any) -> Item:
    return Item.from_wire(data["item"])


def as_is(wire: Wire) -> Wire:
    return wire


def to_dict(out: Any) -> Wire:
    wire: Wire = out.to_dict()
    return wire


# the retry rules of the client: may a request whose outcome is unknown be sent again? --------
def _not_claiming(args: Mapping[str, Any]) -> bool:
    """Setting ``in_progress`` claims, which is no more repeatable than ``claim`` itself."""
    return args.get("status") != "in_progress"


def _with_epoch(args: Mapping[str, Any]) -> bool:
    """A release of one epoch: a repeat changes nothing."""
    return args.get("epoch") is not None


def _with_op_id(args: Mapping[str, Any]) -> bool:
    """A completion with an ``op_id`` answers a repeat with the first result (and follow-ups)."""
    return args.get("op_id") is not None


ASKED = (400, 401, 413, 422)
EDITS = (*ASKED, 403, 404, 409)
#: a per-principal bound: claims count as live leases, creations as items, dispatches as agents
BOUNDED = (*EDITS, 429)
ITEMS = ("items",)
VIEWS = ("queue",)
ITEM = "/v1/items/{id}"

CREATE_ITEM: Verb[ItemIn, Item] = Verb(
    name="create_item",
    method="POST",
    path="/v1/items",
    input=ItemIn,
    run=_create,
    wire=item_wire,
    parse=item_of_reply,
    reply=ir.ItemReply,
    send={"labels": c.listed},
    problems=BOUNDED,
    tags=ITEMS,
    status=201,
    repeatable=never,
    doc="Add an item to the queue (`open`, unassigned).\n\nWith `parent_epoch`, fenced on the "
    "parent like progress: created only while that is the parent's current epoch and you hold "
    "its claim (`409 stale_token` for an older epoch, `403 not_holder` for someone else's), so "
    "a superseded owner cannot fan out work.",
)
LIST_ITEMS: Verb[ListItemsIn, Any] = Verb(  # the client reads it as a page (client.Page)
    name="list_items",
    method="GET",
    path="/v1/items",
    input=ListItemsIn,
    run=_list,
    wire=as_is,
    parse=ir.items_page_reply,
    reply=ir.ItemSummariesReply,
    problems=(401, 422),
    tags=ITEMS,
    doc="Items by priority then age, filtered by status, assignee and label, as summaries (no "
    "`body`, `result` or progress `data`: `GET /v1/items/{id}` has them).\n\nA reply stops "
    "early once its JSON reaches the server's list budget (`truncated: true`); `next` is the "
    "cursor of the following page whenever there may be one.",
)
GET_ITEM: Verb[OnItem, ItemView] = Verb(
    name="get_item",
    method="GET",
    path=ITEM,
    input=OnItem,
    run=lambda s, me, a: s.items.get(a.id),
    wire=to_dict,
    parse=ItemView.from_wire,
    reply=ir.ItemViewOut,
    problems=(401, 404, 422),
    tags=ITEMS,
    doc="The item, its lease (while its epoch's lease exists), lease state and transfers.",
)
UPDATE_ITEM: Verb[ItemPatch, ItemView] = Verb(
    name="update_item",
    method="PATCH",
    path=ITEM,
    input=ItemPatch,
    run=_update,
    wire=to_dict,
    parse=ItemView.from_wire,
    reply=ir.ItemViewOut,
    send={"labels": c.listed},
    problems=BOUNDED,
    tags=ITEMS,
    repeatable=_not_claiming,
    doc="Edit an item; `status: in_progress` claims it for you with the rules of `claim`.\n\n"
    "Only its assignee or an authority over the assignee (an admin, a supervisor, an ancestor) "
    "edits an assigned item: anyone else gets `403 not_holder`, naming the assignee, and "
    "nothing changes.",
)
CLAIM_ITEM: Verb[ClaimIn, Claim] = Verb(
    name="claim_item",
    method="POST",
    path=f"{ITEM}/claim",
    input=ClaimIn,
    run=_claim,
    wire=to_dict,
    parse=Claim.from_wire,
    reply=ir.ClaimReply,
    send={"takeover": c.unless_false},
    problems=(*ASKED, 404, 409, 429),
    tags=ITEMS,
    repeatable=never,
    doc="Claim the item: its lease and the assignee edge; the lease's token is the epoch.\n\n"
    "Re-claiming your own live claim from the same `session` renews it. `409 lease_held` while "
    "someone else's claim (or another session's of yours) is live and not stalled; `409 "
    "assigned_to_other` for someone else's lapsed or stalled claim, and for a revoked "
    "(force-released) one even of yours, unless `takeover` with a `reason`.",
)
RENEW_ITEM: Verb[ItemRenewIn, Lease] = Verb(
    name="renew_item",
    method="POST",
    path=f"{ITEM}/renew",
    input=ItemRenewIn,
    run=lambda s, me, a: s.items.renew(me, a.id, a.epoch, a.ttl_ms),
    wire=lease_reply,
    parse=lease_of_reply,
    reply=LeaseReply,
    problems=EDITS,
    tags=ITEMS,
    doc="Renew your claim's lease (`409 lease_lost` once it is gone).",
)
EXTEND_ITEM: Verb[ItemExtendIn, ExtendResult] = Verb(
    name="extend_item",
    method="POST",
    path=f"{ITEM}/extend",
    input=ItemExtendIn,
    run=lambda s, me, a: s.items.extend(me, a.id, a.until, a.by_ms, a.epoch),
    wire=to_dict,
    parse=ExtendResult.from_wire,
    reply=ExtendReply,
    send={"until": c.to_millis},
    problems=EDITS,
    tags=ITEMS,
    doc="Push your claim's deadline (capped at `max_lease` and says so; never shortens).",
)
RELEASE_ITEM: Verb[ItemReleaseIn, ItemRelease] = Verb(
    name="release_item",
    method="POST",
    path=f"{ITEM}/release",
    input=ItemReleaseIn,
    run=lambda s, me, a: s.items.release(me, a.id, a.epoch, a.session, a.reason, a.exit_status),
    wire=to_dict,
    parse=ItemRelease.from_wire,
    reply=ir.ItemReleaseReply,
    problems=(*ASKED, 403, 404),
    tags=ITEMS,
    repeatable=_with_epoch,
    doc="End your claim: the lease ends, your assignee edge goes, the item reopens.\n\n"
    "Idempotent: `released: false` when you held no live lease on it. Fenced by `epoch`: an "
    "epoch that is no longer the item's answers `released: false` and changes nothing.\n\n"
    "A supervisor whose command exited without completing the item says so with `reason: "
    "command_exited` and the `exit_status`: both are kept on the `released` transfer and "
    "events (`422 invalid_request` for one without the other).",
)
PROGRESS_ITEM: Verb[ProgressIn, Item] = Verb(
    name="progress_item",
    method="POST",
    path=f"{ITEM}/progress",
    input=ProgressIn,
    run=lambda s, me, a: s.items.progress(me, a.id, a.epoch, a.message, a.percent, a.data),
    wire=item_wire,
    parse=item_of_reply,
    reply=ir.ItemReply,
    problems=EDITS,
    tags=ITEMS,
    doc="Report progress, fenced by the epoch (`409 stale_token` unless it is current); only "
    "the claim's holder writes (`403 not_holder` for anyone else, admins included).",
)
COMPLETE_ITEM: Verb[CompleteIn, Completion] = Verb(
    name="complete_item",
    method="POST",
    path=f"{ITEM}/complete",
    input=CompleteIn,
    run=_complete,
    wire=to_dict,
    parse=Completion.from_wire,
    reply=ir.CompletionReply,
    send={"follow_ups": follow_ups_body},
    nulls=("result",),
    problems=BOUNDED,
    tags=ITEMS,
    repeatable=_with_op_id,
    doc="Complete the item, fenced by the epoch and only by the claim's holder (`403 "
    "not_holder` for anyone else); a repeated `op_id` returns the first result.\n\n`follow_ups` "
    "are created under the item in the same transaction: all of them with the completion or "
    "none, and once per `op_id` (a repeat returns the same items).",
)
CANCEL_ITEM: Verb[CancelIn, Item] = Verb(
    name="cancel_item",
    method="POST",
    path=f"{ITEM}/cancel",
    input=CancelIn,
    run=lambda s, me, a: s.items.cancel(me, a.id, a.reason),
    wire=item_wire,
    parse=item_of_reply,
    reply=ir.ItemReply,
    problems=EDITS,
    tags=ITEMS,
    repeatable=never,
    doc="Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin).",
)
REOPEN_ITEM: Verb[CancelIn, Item] = Verb(
    name="reopen_item",
    method="POST",
    path=f"{ITEM}/reopen",
    input=CancelIn,
    run=lambda s, me, a: s.items.reopen(me, a.id, a.reason),
    wire=item_wire,
    parse=item_of_reply,
    reply=ir.ItemReply,
    problems=EDITS,
    tags=ITEMS,
    repeatable=never,
    doc="Reopen a parked item (its claims failed the policy's `max_attempts` times): it is "
    "open and nobody's again, its `attempts` and `failures` reset, recorded as a `reopened` "
    "transfer with the `reason`. Its assignee, its creator, an ancestor of its assignee, a "
    "supervisor or an admin may; an item that is not parked is `409 conflict`.",
)
FORCE_RELEASE_ITEM: Verb[ForceReleaseItemIn, Claim] = Verb(
    name="force_release_item",
    method="POST",
    path=f"{ITEM}/force-release",
    input=ForceReleaseItemIn,
    run=lambda s, me, a: s.items.force_release(me, a.id, a.reason),
    wire=to_dict,
    parse=Claim.from_wire,
    reply=ir.ClaimReply,
    problems=(*ASKED, 403, 404),
    tags=ITEMS,
    repeatable=never,
    doc="End the item's live claim as an authority; the edge stays, the epoch is dead.\n\nThe "
    "claim then reads `revoked`: even its assignee needs `takeover` with a `reason` (or an "
    "authority's `reassign`) to claim it again.",
)
REASSIGN_ITEM: Verb[ReassignIn, Item] = Verb(
    name="reassign_item",
    method="POST",
    path=f"{ITEM}/reassign",
    input=ReassignIn,
    run=lambda s, me, a: s.items.reassign(me, a.id, a.to, a.reason),
    wire=item_wire,
    parse=item_of_reply,
    reply=ir.ItemReply,
    problems=EDITS,
    tags=ITEMS,
    repeatable=never,
    doc="Give the item to `to` as an authority: an admin, a supervisor, or an ancestor of its "
    "assignee (`403 forbidden` for anyone else).\n\nIn one transaction any live claim ends "
    "(`force_released`, its epoch dead for progress and completion) and the assignee edge "
    "moves, recorded as a `reassigned` transfer with the `reason`; `to` then claims without a "
    "takeover. `404` for an unknown `to`, `409 conflict` for a done or cancelled item.",
)
DISPATCH_ITEM: Verb[DispatchIn, Dispatch] = Verb(
    name="dispatch_item",
    method="POST",
    path=f"{ITEM}/dispatch",
    input=DispatchIn,
    run=_dispatch,
    wire=w.to_dict,
    parse=Dispatch.from_wire,
    reply=ir.DispatchReply,
    send={"takeover": c.unless_false},
    problems=BOUNDED,
    tags=ITEMS,
    repeatable=never,
    doc="Create a child agent of yours and claim the item for it, in one transaction.\n\nThe "
    "agent's token is in the reply, once. An item already claimed is `409 lease_held` and no "
    "agent is created. With `takeover` and a `reason`, an item whose claim lapsed, stalled or "
    "was revoked is dispatched again: one assigned to you or to your agents (their supervisor "
    "died), or one whose assignee you may force-release (else `403 forbidden`).",
)
MY_QUEUE: Verb[NoInput, Any] = Verb(
    name="my_queue",
    method="GET",
    path="/v1/queue",
    input=NoInput,
    run=lambda s, me, a: views_page(s.items.queue(me.name), s.limits.list_bytes),
    wire=as_is,
    parse=ir.item_views_from_wire,
    reply=ir.ItemViewSummariesReply,
    problems=(401,),
    tags=VIEWS,
    doc="Your items and your agents', with lease state `live`, `stalled`, `lapsed`, `revoked` "
    "or `reassigned` and its moment (`state`) (item summaries, within the server's list "
    "budget).",
)
QUEUE_OF: Verb[QueueOfIn, Any] = Verb(
    name="queue_of",
    method="GET",
    path="/v1/queue/{principal:path}",
    input=QueueOfIn,
    run=lambda s, me, a: views_page(s.items.queue(a.principal), s.limits.list_bytes),
    wire=as_is,
    parse=ir.item_views_from_wire,
    reply=ir.ItemViewSummariesReply,
    problems=(401, 404, 422),  # 404: a name with a line break matches no route
    tags=VIEWS,
    doc="The items of `principal` and of the agents it dispatched (as `/v1/queue`).",
)
READY_ITEMS: Verb[ReadyIn, Any] = Verb(
    name="ready_items",
    method="GET",
    path="/v1/ready",
    input=ReadyIn,
    run=_ready,
    wire=as_is,
    parse=ReadyView.from_wire,
    reply=ir.ReadyReply,
    problems=(401, 422),
    tags=VIEWS,
    doc="Open, unassigned, unleased items, by priority then age (`items`, summaries as in "
    "`/v1/items`; `next` is always null: the top of the queue is what is ready); then the "
    "claims that lapsed (`lapsed`): work whose holder stopped, to take over with a reason.",
)
BRIEFING: Verb[BriefingIn, Briefing] = Verb(
    name="briefing",
    method="GET",
    path="/v1/briefing",
    input=BriefingIn,
    run=lambda s, me, a: s.items.briefing(me, a.ready),
    wire=to_dict,
    parse=Briefing.from_wire,
    reply=ir.BriefingReply,
    problems=(401, 422),
    tags=VIEWS,
    # a briefing moves the caller's cursor: a repeat would answer "nothing happened" for what
    # the lost reply carried
    repeatable=never,
    doc="What you carry, what lapsed, what happened to your work since your last briefing "
    "(this call moves that cursor), and the top of the ready queue. A supervisor's (or an "
    "admin's) `lapsed` and `stalled` also list the claims of those it supervises.",
)
