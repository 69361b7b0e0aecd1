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
)
from tenure.verbs.leases import EXTENDED, LEASE
from tenure.verbs.summaries import decode_cursor, items_page, views_page
from tenure.verbs.table import Family, Reply, Services, Wire, never


def given(**values: Any) -> dict[str, Any]:
    """The fields the caller sent: ``null`` means absent, as everywhere in the API."""
    return {k: v for k, v in values.items() if v is not None}


def _plain(follow_ups: Any) -> Any:
    """Parsed follow-ups as the service takes them; anything else (direct mode's unchecked
    arguments) as it is, for the service to name what is wrong with it."""
    if not isinstance(follow_ups, list):
        return follow_ups
    return [f.model_dump(exclude_none=True) if isinstance(f, BaseModel) else f for f in follow_ups]


def item_wire(item: Item) -> Wire:
    return {"item": item.to_dict()}


def item_of_reply(data: Any) -> Item:
    return Item.from_wire(data["item"])


def as_is(wire: Wire) -> Wire:
    return wire


# how the results travel ----------------------------------------------------------------------
ITEM = Reply(item_wire, item_of_reply, ir.ItemReply)
VIEW = Reply.of(ItemView.from_wire, ir.ItemViewOut)
CLAIM = Reply.of(Claim.from_wire, ir.ClaimReply)
#: the lists are built within the server's list budget as JSON (the client reads a page)
SUMMARIES: Reply[Any] = Reply(as_is, ir.items_page_reply, ir.ItemSummariesReply)
VIEWS_PAGE: Reply[Any] = Reply(as_is, ir.item_views_from_wire, ir.ItemViewSummariesReply)
READY: Reply[Any] = Reply(as_is, ReadyView.from_wire, ir.ReadyReply)


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
#: the verbs of items and claims (an item's own routes: ``/v1/items/{id}/...``)
ITEMS = Family(tags=("items",), problems=EDITS)
#: the views of the queue: whose work is what, what is ready, what happened
QUEUE = Family(tags=("queue",), problems=(401, 422))


# the verbs: what each one runs (its docstring describes the operation) and its entry ---------
def _create(s: Services, me: Principal, a: ItemIn) -> Item:
    """Add an item to the queue (`open`, unassigned).

    With `parent_epoch`, fenced on the parent like progress: created only while that is the
    parent's current epoch and you hold its claim (`409 stale_token` for an older epoch, `403
    not_holder` for someone else's), so a superseded owner cannot fan out work."""
    fields = given(
        id=a.id, body=a.body, priority=a.priority, labels=a.labels, parent=a.parent,
        parent_epoch=a.parent_epoch,
    )  # fmt: skip
    return s.items.create(me, a.title, **fields)


CREATE_ITEM = ITEMS.verb(
    "create_item", "POST /v1/items", ItemIn, _create, ITEM, problems=BOUNDED, status=201,
    repeatable=never,
)  # fmt: skip


def _list(s: Services, me: Principal, a: ListItemsIn) -> Wire:
    """Items by priority then age, filtered by status, assignee and label, as summaries (no
    `body`, `result` or progress `data`: `GET /v1/items/{id}` has them).

    A reply stops early once its JSON reaches the server's list budget (`truncated: true`);
    `next` is the cursor of the following page whenever there may be one."""
    query = ItemQuery(a.status, a.assignee, a.label, a.limit, decode_cursor(a.after))
    found = s.items.summaries(query)
    return items_page(found, a.limit, s.limits.list_bytes)


LIST_ITEMS = ITEMS.verb(
    "list_items", "GET /v1/items", ListItemsIn, _list, SUMMARIES, problems=(401, 422)
)


def _get(s: Services, me: Principal, a: OnItem) -> ItemView:
    """The item, its lease (while its epoch's lease exists), lease state and transfers."""
    return s.items.get(a.id)


GET_ITEM = ITEMS.verb(
    "get_item", "GET /v1/items/{id}", OnItem, _get, VIEW, problems=(401, 404, 422)
)


def _update(s: Services, me: Principal, a: ItemPatch) -> ItemView:
    """Edit an item; `status: in_progress` claims it for you with the rules of `claim`.

    Only its assignee or an authority over the assignee (an admin, a supervisor, an ancestor)
    edits an assigned item: anyone else gets `403 not_holder`, naming the assignee, and nothing
    changes."""
    changes = given(**{name: getattr(a, name) for name in a.model_fields_set if name != "id"})
    return s.items.update(me, a.id, **changes)


UPDATE_ITEM = ITEMS.verb(
    "update_item", "PATCH /v1/items/{id}", ItemPatch, _update, VIEW, problems=BOUNDED,
    repeatable=_not_claiming,
)  # fmt: skip


def _claim(s: Services, me: Principal, a: ClaimIn) -> Claim:
    """Claim the item: its lease and the assignee edge; the lease's token is the epoch.

    Re-claiming your own live claim from the same `session` renews it. `409 lease_held` while
    someone else's claim (or another session's of yours) is live and not stalled; `409
    assigned_to_other` for someone else's lapsed or stalled claim, and for a revoked
    (force-released) one even of yours, unless `takeover` with a `reason`."""
    takeover = bool(a.takeover)
    return s.items.claim(me, a.id, a.ttl_ms, a.task, takeover, a.reason, a.session)


CLAIM_ITEM = ITEMS.verb(
    "claim_item", "POST /v1/items/{id}/claim", ClaimIn, _claim, CLAIM,
    problems=(*ASKED, 404, 409, 429), repeatable=never,
)  # fmt: skip


def _renew(s: Services, me: Principal, a: ItemRenewIn) -> Lease:
    """Renew your claim's lease (`409 lease_lost` once it is gone)."""
    return s.items.renew(me, a.id, a.epoch, a.ttl_ms)


RENEW_ITEM = ITEMS.verb("renew_item", "POST /v1/items/{id}/renew", ItemRenewIn, _renew, LEASE)


def _extend(s: Services, me: Principal, a: ItemExtendIn) -> ExtendResult:
    """Push your claim's deadline (capped at `max_lease` and says so; never shortens)."""
    return s.items.extend(me, a.id, a.until, a.by_ms, a.epoch)


EXTEND_ITEM = ITEMS.verb(
    "extend_item", "POST /v1/items/{id}/extend", ItemExtendIn, _extend, EXTENDED
)


def _release(s: Services, me: Principal, a: ItemReleaseIn) -> ItemRelease:
    """End your claim: the lease ends, your assignee edge goes, the item reopens.

    Idempotent: `released: false` when you held no live lease on it. Fenced by `epoch`: an epoch
    that is no longer the item's answers `released: false` and changes nothing.

    A supervisor whose command exited without completing the item says so with `reason:
    command_exited` and the `exit_status`: both are kept on the `released` transfer and events
    (`422 invalid_request` for one without the other)."""
    return s.items.release(me, a.id, a.epoch, a.session, a.reason, a.exit_status)


RELEASE_ITEM = ITEMS.verb(
    "release_item", "POST /v1/items/{id}/release", ItemReleaseIn, _release,
    Reply.of(ItemRelease.from_wire, ir.ItemReleaseReply), problems=(*ASKED, 403, 404),
    repeatable=_with_epoch,
)  # fmt: skip


def _progress(s: Services, me: Principal, a: ProgressIn) -> Item:
    """Report progress, fenced by the epoch (`409 stale_token` unless it is current); only the
    claim's holder writes (`403 not_holder` for anyone else, admins included)."""
    return s.items.progress(me, a.id, a.epoch, a.message, a.percent, a.data)


PROGRESS_ITEM = ITEMS.verb(
    "progress_item", "POST /v1/items/{id}/progress", ProgressIn, _progress, ITEM
)


def _complete(s: Services, me: Principal, a: CompleteIn) -> Completion:
    """Complete the item, fenced by the epoch and only by the claim's holder (`403 not_holder`
    for anyone else); a repeated `op_id` returns the first result.

    `follow_ups` are created under the item in the same transaction: all of them with the
    completion or none, and once per `op_id` (a repeat returns the same items)."""
    follow_ups = _plain(a.follow_ups)
    return s.items.complete(me, a.id, a.epoch, a.result, a.op_id, follow_ups=follow_ups)


COMPLETE_ITEM = ITEMS.verb(
    "complete_item", "POST /v1/items/{id}/complete", CompleteIn, _complete,
    Reply.of(Completion.from_wire, ir.CompletionReply), problems=BOUNDED, nulls=("result",),
    repeatable=_with_op_id,
)  # fmt: skip


def _cancel(s: Services, me: Principal, a: CancelIn) -> Item:
    """Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin)."""
    return s.items.cancel(me, a.id, a.reason)


CANCEL_ITEM = ITEMS.verb(
    "cancel_item", "POST /v1/items/{id}/cancel", CancelIn, _cancel, ITEM, repeatable=never
)


def _reopen(s: Services, me: Principal, a: CancelIn) -> Item:
    """Reopen a parked item (its claims failed the policy's `max_attempts` times): it is open and
    nobody's again, its `attempts` and `failures` reset, recorded as a `reopened` transfer with
    the `reason`. Its assignee, its creator, an ancestor of its assignee, a supervisor or an
    admin may; an item that is not parked is `409 conflict`."""
    return s.items.reopen(me, a.id, a.reason)


REOPEN_ITEM = ITEMS.verb(
    "reopen_item", "POST /v1/items/{id}/reopen", CancelIn, _reopen, ITEM, repeatable=never
)


def _force_release(s: Services, me: Principal, a: ForceReleaseItemIn) -> Claim:
    """End the item's live claim as an authority; the edge stays, the epoch is dead.

    The claim then reads `revoked`: even its assignee needs `takeover` with a `reason` (or an
    authority's `reassign`) to claim it again."""
    return s.items.force_release(me, a.id, a.reason)


FORCE_RELEASE_ITEM = ITEMS.verb(
    "force_release_item", "POST /v1/items/{id}/force-release", ForceReleaseItemIn,
    _force_release, CLAIM, problems=(*ASKED, 403, 404), repeatable=never,
)  # fmt: skip


def _reassign(s: Services, me: Principal, a: ReassignIn) -> Item:
    """Give the item to `to` as an authority: an admin, a supervisor, or an ancestor of its
    assignee (`403 forbidden` for anyone else).

    In one transaction any live claim ends (`force_released`, its epoch dead for progress and
    completion) and the assignee edge moves, recorded as a `reassigned` transfer with the
    `reason`; `to` then claims without a takeover. `404` for an unknown `to`, `409 conflict` for
    a done or cancelled item."""
    return s.items.reassign(me, a.id, a.to, a.reason)


REASSIGN_ITEM = ITEMS.verb(
    "reassign_item", "POST /v1/items/{id}/reassign", ReassignIn, _reassign, ITEM, repeatable=never
)


def _dispatch(s: Services, me: Principal, a: DispatchIn) -> Dispatch:
    """Create a child agent of yours and claim the item for it, in one transaction.

    The agent's token is in the reply, once. An item already claimed is `409 lease_held` and no
    agent is created. With `takeover` and a `reason`, an item whose claim lapsed, stalled or was
    revoked is dispatched again: one assigned to you or to your agents (their supervisor died),
    or one whose assignee you may force-release (else `403 forbidden`)."""
    return s.items.dispatch(
        me, a.id, a.agent, a.ttl_ms, a.task, a.session, takeover=bool(a.takeover),
        reason=a.reason,
    )  # fmt: skip


DISPATCH_ITEM = ITEMS.verb(
    "dispatch_item", "POST /v1/items/{id}/dispatch", DispatchIn, _dispatch,
    Reply.of(Dispatch.from_wire, ir.DispatchReply), problems=BOUNDED, repeatable=never,
)  # fmt: skip


def _my_queue(s: Services, me: Principal, a: NoInput) -> Wire:
    """Your items and your agents', with lease state `live`, `stalled`, `lapsed`, `revoked` or
    `reassigned` and its moment (`state`) (item summaries, within the server's list budget)."""
    return views_page(s.items.queue(me.name), s.limits.list_bytes)


MY_QUEUE = QUEUE.verb("my_queue", "GET /v1/queue", NoInput, _my_queue, VIEWS_PAGE, problems=(401,))


def _queue_of(s: Services, me: Principal, a: QueueOfIn) -> Wire:
    """The items of `principal` and of the agents it dispatched (as `/v1/queue`)."""
    return views_page(s.items.queue(a.principal), s.limits.list_bytes)


QUEUE_OF = QUEUE.verb(
    "queue_of", "GET /v1/queue/{principal:path}", QueueOfIn, _queue_of, VIEWS_PAGE,
    problems=(401, 404, 422),  # 404: a name with a line break matches no route
)  # fmt: skip


def _ready(s: Services, me: Principal, a: ReadyIn) -> Wire:
    """Open, unassigned, unleased items, by priority then age (`items`, summaries as in
    `/v1/items`; `next` is always null: the top of the queue is what is ready); then the claims
    that lapsed (`lapsed`): work whose holder stopped, to take over with a reason."""
    budget = s.limits.list_bytes
    page = items_page(s.items.ready_summaries(a.limit), MAX_LIMIT + 1, budget)
    lapsed = views_page(s.items.lapsed(a.limit), budget)
    truncated = page["truncated"] or lapsed["truncated"]
    return {**page, "lapsed": lapsed["items"], "truncated": truncated, "next": None}


READY_ITEMS = QUEUE.verb("ready_items", "GET /v1/ready", ReadyIn, _ready, READY)


def _briefing(s: Services, me: Principal, a: BriefingIn) -> Briefing:
    """What you carry, what lapsed, what happened to your work since your last briefing (this
    call moves that cursor), and the top of the ready queue. A supervisor's (or an admin's)
    `lapsed` and `stalled` also list the claims of those it supervises."""
    return s.items.briefing(me, a.ready)


BRIEFING = QUEUE.verb(
    "briefing", "GET /v1/briefing", BriefingIn, _briefing,
    Reply.of(Briefing.from_wire, ir.BriefingReply),
    # a briefing moves the caller's cursor: a repeat would answer "nothing happened" for what
    # the lost reply carried
    repeatable=never,
)  # fmt: skip
