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
from tenure.verbs import item_replies as ir
from tenure.verbs import wire as w
from tenure.verbs.item_inputs import (
    BriefingIn,
    CancelArgs,
    CancelIn,
    ClaimArgs,
    ClaimIn,
    CompleteArgs,
    CompleteIn,
    DispatchArgs,
    DispatchIn,
    ForceReleaseItemArgs,
    ForceReleaseItemIn,
    ItemExtendArgs,
    ItemExtendIn,
    ItemIn,
    ItemPatch,
    ItemPatchArgs,
    ItemReleaseArgs,
    ItemReleaseIn,
    ItemRenewArgs,
    ItemRenewIn,
    ListItemsIn,
    NoInput,
    OnItem,
    ProgressArgs,
    ProgressIn,
    QueueOfIn,
    ReadyIn,
    ReassignArgs,
    ReassignIn,
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


def _update(s: Services, me: Principal, a: ItemPatchArgs) -> ItemView:
    changes = given(**{name: getattr(a, name) for name in a.model_fields_set if name != "id"})
    return s.items.update(me, a.id, **changes)


def _claim(s: Services, me: Principal, a: ClaimArgs) -> Claim:
    takeover = bool(a.takeover)
    return s.items.claim(me, a.id, a.ttl_ms, a.task, takeover, a.reason, a.session)


def _complete(s: Services, me: Principal, a: CompleteArgs) -> Completion:
    follow_ups = _plain(a.follow_ups)
    return s.items.complete(me, a.id, a.epoch, a.result, a.op_id, follow_ups=follow_ups)


def _plain(follow_ups: Any) -> Any:
    """Parsed follow-ups as the service takes them; anything else (direct mode's unchecked
    arguments) as it is, for the service to name what is wrong with it."""
    if not isinstance(follow_ups, list):
        return follow_ups
    return [f.model_dump(exclude_none=True) if isinstance(f, BaseModel) else f for f in follow_ups]


def _dispatch(s: Services, me: Principal, a: DispatchArgs) -> Dispatch:
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
    "create_item", "POST", "/v1/items", ItemIn, _create, item_wire, item_of_reply, ir.ItemReply,
    problems=BOUNDED, tags=ITEMS, status=201, repeatable=never,
    doc="Add an item to the queue (`open`, unassigned).\n\nWith `parent_epoch`, fenced on the "
    "parent like progress: created only while that is the parent's current epoch and you hold "
    "its claim (`409 stale_token` for an older epoch, `403 not_holder` for someone else's), so "
    "a superseded owner cannot fan out work.",
)  # fmt: skip
LIST_ITEMS: Verb[ListItemsIn, Any] = Verb(  # the client reads it as a page (client.Page)
    "list_items", "GET", "/v1/items", ListItemsIn, _list, as_is, as_is,
    ir.ItemSummariesReply, problems=(401, 422), tags=ITEMS,
    doc="Items by priority then age, filtered by status, assignee and label, as summaries (no "
    "`body`, `result` or progress `data`: `GET /v1/items/{id}` has them).\n\nA reply stops "
    "early once its JSON reaches the server's list budget (`truncated: true`); `next` is the "
    "cursor of the following page whenever there may be one.",
)  # fmt: skip
GET_ITEM: Verb[OnItem, ItemView] = Verb(
    "get_item", "GET", ITEM, OnItem, lambda s, me, a: s.items.get(a.id), to_dict,
    ItemView.from_wire, ir.ItemViewOut, problems=(401, 404, 422), tags=ITEMS,
    doc="The item, its lease (while its epoch's lease exists), lease state and transfers.",
)  # fmt: skip
UPDATE_ITEM: Verb[ItemPatchArgs, ItemView] = Verb(
    "update_item", "PATCH", ITEM, ItemPatchArgs, _update, to_dict, ItemView.from_wire,
    ir.ItemViewOut, problems=BOUNDED, tags=ITEMS, repeatable=_not_claiming, body=ItemPatch,
    doc="Edit an item; `status: in_progress` claims it for you with the rules of `claim`.\n\n"
    "Only its assignee or an authority over the assignee (an admin, a supervisor, an ancestor) "
    "edits an assigned item: anyone else gets `403 not_holder`, naming the assignee, and "
    "nothing changes.",
)  # fmt: skip
CLAIM_ITEM: Verb[ClaimArgs, Claim] = Verb(
    "claim_item", "POST", f"{ITEM}/claim", ClaimArgs, _claim, to_dict, Claim.from_wire,
    ir.ClaimReply, problems=(*ASKED, 404, 409, 429), tags=ITEMS, repeatable=never, body=ClaimIn,
    doc="Claim the item: its lease and the assignee edge; the lease's token is the epoch.\n\n"
    "Re-claiming your own live claim from the same `session` renews it. `409 lease_held` while "
    "someone else's claim (or another session's of yours) is live and not stalled; `409 "
    "assigned_to_other` for someone else's lapsed or stalled claim, and for a revoked "
    "(force-released) one even of yours, unless `takeover` with a `reason`.",
)  # fmt: skip
RENEW_ITEM: Verb[ItemRenewArgs, Lease] = Verb(
    "renew_item", "POST", f"{ITEM}/renew", ItemRenewArgs,
    lambda s, me, a: s.items.renew(me, a.id, a.epoch, a.ttl_ms), lease_reply, lease_of_reply,
    LeaseReply, problems=EDITS, tags=ITEMS, body=ItemRenewIn,
    doc="Renew your claim's lease (`409 lease_lost` once it is gone).",
)  # fmt: skip
EXTEND_ITEM: Verb[ItemExtendArgs, ExtendResult] = Verb(
    "extend_item", "POST", f"{ITEM}/extend", ItemExtendArgs,
    lambda s, me, a: s.items.extend(me, a.id, a.until, a.by_ms, a.epoch), to_dict,
    ExtendResult.from_wire, ExtendReply, problems=EDITS, tags=ITEMS, body=ItemExtendIn,
    doc="Push your claim's deadline (capped at `max_lease` and says so; never shortens).",
)  # fmt: skip
RELEASE_ITEM: Verb[ItemReleaseArgs, ItemRelease] = Verb(
    "release_item", "POST", f"{ITEM}/release", ItemReleaseArgs,
    lambda s, me, a: s.items.release(me, a.id, a.epoch, a.session), to_dict,
    ItemRelease.from_wire, ir.ItemReleaseReply, problems=(*ASKED, 403, 404), tags=ITEMS,
    repeatable=_with_epoch, body=ItemReleaseIn,
    doc="End your claim: the lease ends, your assignee edge goes, the item reopens.\n\n"
    "Idempotent: `released: false` when you held no live lease on it. Fenced by `epoch`: an "
    "epoch that is no longer the item's answers `released: false` and changes nothing.",
)  # fmt: skip
PROGRESS_ITEM: Verb[ProgressArgs, Item] = Verb(
    "progress_item", "POST", f"{ITEM}/progress", ProgressArgs,
    lambda s, me, a: s.items.progress(me, a.id, a.epoch, a.message, a.percent, a.data),
    item_wire, item_of_reply, ir.ItemReply, problems=EDITS, tags=ITEMS, body=ProgressIn,
    doc="Report progress, fenced by the epoch (`409 stale_token` unless it is current); only "
    "the claim's holder writes (`403 not_holder` for anyone else, admins included).",
)  # fmt: skip
COMPLETE_ITEM: Verb[CompleteArgs, Completion] = Verb(
    "complete_item", "POST", f"{ITEM}/complete", CompleteArgs, _complete, to_dict,
    Completion.from_wire, ir.CompletionReply, problems=BOUNDED, tags=ITEMS,
    repeatable=_with_op_id, body=CompleteIn,
    doc="Complete the item, fenced by the epoch and only by the claim's holder (`403 "
    "not_holder` for anyone else); a repeated `op_id` returns the first result.\n\n`follow_ups` "
    "are created under the item in the same transaction: all of them with the completion or "
    "none, and once per `op_id` (a repeat returns the same items).",
)  # fmt: skip
CANCEL_ITEM: Verb[CancelArgs, Item] = Verb(
    "cancel_item", "POST", f"{ITEM}/cancel", CancelArgs,
    lambda s, me, a: s.items.cancel(me, a.id, a.reason), item_wire, item_of_reply,
    ir.ItemReply, problems=EDITS, tags=ITEMS, repeatable=never, body=CancelIn,
    doc="Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin).",
)  # fmt: skip
FORCE_RELEASE_ITEM: Verb[ForceReleaseItemArgs, Claim] = Verb(
    "force_release_item", "POST", f"{ITEM}/force-release", ForceReleaseItemArgs,
    lambda s, me, a: s.items.force_release(me, a.id, a.reason), to_dict, Claim.from_wire,
    ir.ClaimReply, problems=(*ASKED, 403, 404), tags=ITEMS, repeatable=never,
    body=ForceReleaseItemIn,
    doc="End the item's live claim as an authority; the edge stays, the epoch is dead.\n\nThe "
    "claim then reads `revoked`: even its assignee needs `takeover` with a `reason` (or an "
    "authority's `reassign`) to claim it again.",
)  # fmt: skip
REASSIGN_ITEM: Verb[ReassignArgs, Item] = Verb(
    "reassign_item", "POST", f"{ITEM}/reassign", ReassignArgs,
    lambda s, me, a: s.items.reassign(me, a.id, a.to, a.reason), item_wire, item_of_reply,
    ir.ItemReply, problems=EDITS, tags=ITEMS, repeatable=never, body=ReassignIn,
    doc="Give the item to `to` as an authority: an admin, a supervisor, or an ancestor of its "
    "assignee (`403 forbidden` for anyone else).\n\nIn one transaction any live claim ends "
    "(`force_released`, its epoch dead for progress and completion) and the assignee edge "
    "moves, recorded as a `reassigned` transfer with the `reason`; `to` then claims without a "
    "takeover. `404` for an unknown `to`, `409 conflict` for a done or cancelled item.",
)  # fmt: skip
DISPATCH_ITEM: Verb[DispatchArgs, Dispatch] = Verb(
    "dispatch_item", "POST", f"{ITEM}/dispatch", DispatchArgs, _dispatch, w.to_dict,
    Dispatch.from_wire, ir.DispatchReply, problems=BOUNDED, tags=ITEMS, repeatable=never,
    body=DispatchIn,
    doc="Create a child agent of yours and claim the item for it, in one transaction.\n\nThe "
    "agent's token is in the reply, once. An item already claimed is `409 lease_held` and no "
    "agent is created. With `takeover` and a `reason`, an item whose claim lapsed, stalled or "
    "was revoked is dispatched again: one assigned to you or to your agents (their supervisor "
    "died), or one whose assignee you may force-release (else `403 forbidden`).",
)  # fmt: skip
MY_QUEUE: Verb[NoInput, Any] = Verb(
    "my_queue", "GET", "/v1/queue", NoInput,
    lambda s, me, a: views_page(s.items.queue(me.name), s.limits.list_bytes), as_is,
    ir.item_views_from_wire, ir.ItemViewSummariesReply, problems=(401,), tags=VIEWS,
    doc="Your items and your agents', with lease state `live`, `stalled`, `lapsed`, `revoked` "
    "or `reassigned` and its moment (`state`) (item summaries, within the server's list "
    "budget).",
)  # fmt: skip
QUEUE_OF: Verb[QueueOfIn, Any] = Verb(
    "queue_of", "GET", "/v1/queue/{principal:path}", QueueOfIn,
    lambda s, me, a: views_page(s.items.queue(a.principal), s.limits.list_bytes), as_is,
    ir.item_views_from_wire, ir.ItemViewSummariesReply,
    problems=(401, 404, 422),  # 404: a name with a line break matches no route
    tags=VIEWS, doc="The items of `principal` and of the agents it dispatched (as `/v1/queue`).",
)  # fmt: skip
READY_ITEMS: Verb[ReadyIn, Any] = Verb(
    "ready_items", "GET", "/v1/ready", ReadyIn, _ready, as_is, ReadyView.from_wire,
    ir.ReadyReply, problems=(401, 422), tags=VIEWS,
    doc="Open, unassigned, unleased items, by priority then age (`items`, summaries as in "
    "`/v1/items`; `next` is always null: the top of the queue is what is ready); then the "
    "claims that lapsed (`lapsed`): work whose holder stopped, to take over with a reason.",
)  # fmt: skip
BRIEFING: Verb[BriefingIn, Briefing] = Verb(
    "briefing", "GET", "/v1/briefing", BriefingIn,
    lambda s, me, a: s.items.briefing(me, a.ready), to_dict, Briefing.from_wire,
    ir.BriefingReply, problems=(401, 422), tags=VIEWS,
    # a briefing moves the caller's cursor: a repeat would answer "nothing happened" for what
    # the lost reply carried
    repeatable=never,
    doc="What you carry, what lapsed, what happened to your work since your last briefing "
    "(this call moves that cursor), and the top of the ready queue. A supervisor's (or an "
    "admin's) `lapsed` and `stalled` also list the claims of those it supervises.",
)  # fmt: skip
