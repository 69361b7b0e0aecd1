"""The replies of the item and claim verbs (:mod:`tenure.verbs.items`): their schemas for the
OpenAPI document, and their reading back into the core's models (the client's side).

A list carries item summaries (:mod:`tenure.verbs.summaries`): a summary read back has an empty
``body`` and no ``result`` (``get_item`` has them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.items import REASONS, Item, ItemView, Transfer
from tenure.core.models import Event, ExtendResult, Lease, Principal
from tenure.verbs.replies import EventOut, LeaseOut, Out

#: an item's status
Status = Literal["open", "in_progress", "blocked", "done", "cancelled"]


class ItemOut(Out):
    id: str
    title: str
    body: str
    status: Status
    priority: int
    labels: list[str]
    parent: str | None
    assignee: str | None
    epoch: int
    progress: dict[str, Any] | None
    progress_at: int | None
    result: Any
    created_by: str
    created_at: int
    updated_at: int
    revoked: Annotated[
        bool,
        Field(
            description="its claim was force-released: the assignee stays, but even it needs "
            "a takeover with a reason (or a reassign) to claim it again"
        ),
    ]


class TransferOut(Out):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    item: str
    from_: str | None = Field(alias="from")
    to: str | None
    epoch: int
    reason: Annotated[str, Field(json_schema_extra={"enum": list(REASONS)})]
    actor: str
    at: int
    note: str | None


LeaseState = Annotated[
    Literal["live", "stalled", "lapsed", "revoked", "none"],
    Field(
        description="`live`; `stalled` (live, but no progress for the policy's "
        "`stall_after`); `lapsed` (assigned, the lease gone); `revoked` (force-released, "
        "the assignee kept); `none`"
    ),
]


class ItemViewOut(Out):
    item: ItemOut
    lease: LeaseOut | None
    lease_state: LeaseState
    transfers: list[TransferOut]


class ItemReply(Out):
    item: ItemOut


class ItemSummaryOut(Out):
    """An item in a list: without its `body`, `result` and progress `data` (`GET
    /v1/items/{id}` has them)."""

    id: str
    title: str
    body_chars: Annotated[int, Field(description="the length of its body, in characters")]
    status: Status
    priority: int
    labels: list[str]
    parent: str | None
    assignee: str | None
    epoch: int
    progress: Annotated[
        dict[str, Any] | None, Field(description="its last progress, without `data`")
    ]
    progress_at: int | None
    has_result: Annotated[bool, Field(description="whether it has a result")]
    created_by: str
    created_at: int
    updated_at: int
    revoked: bool


Truncated = Annotated[
    bool,
    Field(description="the reply stopped early: its JSON reached the server's list budget"),
]


class ItemSummariesReply(Out):
    items: list[ItemSummaryOut]
    truncated: Truncated
    next: Annotated[
        str | None,
        Field(description="the cursor of the next page (pass it as `after`); null at the end"),
    ]


class ItemViewSummaryOut(Out):
    item: ItemSummaryOut
    lease: LeaseOut | None
    lease_state: LeaseState
    transfers: list[TransferOut]


class ItemViewSummariesReply(Out):
    items: list[ItemViewSummaryOut]
    truncated: Truncated


class ReadyReply(Out):
    items: Annotated[
        list[ItemSummaryOut], Field(description="open items nobody has, by priority then age")
    ]
    lapsed: Annotated[
        list[ItemViewSummaryOut],
        Field(
            description="claims that lapsed (the holder's lease ran out; nobody released, "
            "force-released or reassigned it), by priority then age: the assignee claims it "
            "again, anyone else with `takeover` and a `reason`"
        ),
    ]
    truncated: Truncated
    next: Annotated[None, Field(description="always null: the top of the queue is what is ready")]


class ClaimReply(Out):
    item: ItemOut
    lease: LeaseOut


class ItemReleaseReply(Out):
    released: bool
    item: ItemOut


class CompletionReply(Out):
    item: ItemOut
    duplicate: bool
    follow_ups: Annotated[
        list[ItemOut], Field(description="the items this completion created (on a repeat too)")
    ]


class AgentOut(Out):
    name: str
    kind: Literal["agent"]
    roles: list[Literal["admin", "supervisor"]]
    parent: str | None
    token: str


class DispatchReply(Out):
    item: ItemOut
    lease: LeaseOut
    agent: AgentOut


class BriefingReply(Out):
    principal: str
    carrying: list[ItemViewOut]
    lapsed: list[ItemViewOut]
    happened: list[EventOut]
    ready: list[ItemOut]
    stalled: Annotated[
        list[ItemViewOut],
        Field(description="live claims of yours and your agents' that stopped making progress"),
    ]


# reading a reply back ---------------------------------------------------------------------
SUMMARY_DEFAULTS: dict[str, Any] = {"body": "", "result": None}
ITEM_FIELDS = (
    "id", "title", "body", "status", "priority", "parent", "assignee", "epoch", "progress",
    "progress_at", "result", "created_by", "created_at", "updated_at",
)  # fmt: skip
EVENT_FIELDS = ("key", "holder", "task", "token", "actor", "reason")


def item_from_wire(data: Any) -> Item:
    """The item of a reply; a list's summary has no ``body`` or ``result`` (empty here)."""
    values = {name: data.get(name, SUMMARY_DEFAULTS.get(name)) for name in ITEM_FIELDS}
    return Item(**values, labels=tuple(data["labels"]), revoked=bool(data.get("revoked", False)))


def transfer_from_wire(data: Any) -> Transfer:
    return Transfer(
        data["item"], data["from"], data["to"], data["epoch"], data["reason"], data["actor"],
        data["at"], data.get("note"),
    )  # fmt: skip


def item_view_from_wire(data: Any) -> ItemView:
    lease = data.get("lease")
    return ItemView(
        item_from_wire(data["item"]),
        None if lease is None else Lease.from_wire(lease),
        data["lease_state"],
        tuple(transfer_from_wire(x) for x in data.get("transfers") or ()),
    )


def item_views_from_wire(data: Any) -> list[ItemView]:
    return [item_view_from_wire(x) for x in data["items"]]


def extend_result_from_wire(data: Any) -> ExtendResult:
    lease, until = Lease.from_wire(data["lease"]), (data["requested_until"], data["granted_until"])
    return ExtendResult(lease, bool(data["extended"]), bool(data["capped"]), *until)


def event_from_wire(data: Any) -> Event:
    optional = {name: data.get(name) for name in EVENT_FIELDS}
    extra = dict(data.get("data") or {})
    return Event(data["id"], data["at"], data["type"], **optional, data=extra)


def ready_view_from_wire(data: Any) -> ReadyView:
    lapsed = tuple(item_view_from_wire(x) for x in data.get("lapsed") or ())
    return ReadyView(tuple(item_from_wire(x) for x in data["items"]), lapsed)


def claim_from_wire(data: Any) -> Claim:
    return Claim(item_from_wire(data["item"]), Lease.from_wire(data["lease"]))


def completion_from_wire(data: Any) -> Completion:
    follow_ups = tuple(item_from_wire(x) for x in data.get("follow_ups") or ())
    return Completion(item_from_wire(data["item"]), bool(data["duplicate"]), follow_ups)


def item_release_from_wire(data: Any) -> ItemRelease:
    return ItemRelease(bool(data["released"]), item_from_wire(data["item"]))


def dispatch_wire(dispatch: Dispatch) -> dict[str, Any]:
    """The dispatch reply: the agent's whole principal and its token (shown once)."""
    agent = {**dispatch.agent.to_dict(), "token": dispatch.token}
    return {"item": dispatch.item.to_dict(), "lease": dispatch.lease.to_dict(), "agent": agent}


def dispatch_from_wire(data: Any) -> Dispatch:
    agent = data["agent"]
    principal = Principal(
        agent["name"], agent.get("kind", "agent"), tuple(agent.get("roles") or ()),
        agent.get("parent"),
    )  # fmt: skip
    item, lease = item_from_wire(data["item"]), Lease.from_wire(data["lease"])
    return Dispatch(item, lease, principal, agent["token"])


def briefing_from_wire(data: Any) -> Briefing:
    views = {k: tuple(item_view_from_wire(x) for x in data.get(k) or ()) for k in VIEW_LISTS}
    return Briefing(
        data["principal"],
        views["carrying"],
        views["lapsed"],
        tuple(event_from_wire(x) for x in data["happened"]),
        tuple(item_from_wire(x) for x in data["ready"]),
        views["stalled"],
    )


VIEW_LISTS = ("carrying", "lapsed", "stalled")
