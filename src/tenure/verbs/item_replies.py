"""The replies of the item and claim verbs (:mod:`tenure.verbs.items`): their schemas for the
OpenAPI document, and their reading back into the core's models (the client's side).

A list carries item summaries (:mod:`tenure.verbs.summaries`): a summary read back has an empty
``body`` and no ``result`` (``get_item`` has them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from tenure.core.items import REASONS, ItemView
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
    Literal["live", "stalled", "lapsed", "released", "revoked", "reassigned", "expired", "none"],
    Field(
        description="`live`; `stalled` (live, but no progress for the policy's "
        "`stall_after`); `lapsed` (the holder let the lease run out, the item still its "
        "assignee's); `revoked` (force-released, the assignee kept); `reassigned` (moved to "
        "another assignee since the claim, not claimed by it yet); `released` (its holder let "
        "it go); `none` (no claim). `state` has the moment that goes with it"
    ),
]


class StateOut(Out):
    """The word of `lease_state` with its moment, and who did it and why."""

    word: LeaseState
    at: Annotated[
        int | None,
        Field(
            description="epoch ms: when the lease expires (`live`, `stalled`), else when the "
            "state began (`lapsed`: when the lease ran out); null when not known"
        ),
    ]
    by: Annotated[str | None, Field(description="who revoked, reassigned or released it")]
    reason: Annotated[str | None, Field(description="why (the reason they gave)")]
    to: Annotated[str | None, Field(description="`reassigned`: the new assignee")]
    since: Annotated[
        int | None, Field(description="`stalled`: epoch ms of the last progress (or the claim)")
    ]


class ItemViewOut(Out):
    item: ItemOut
    lease: LeaseOut | None
    lease_state: LeaseState
    state: StateOut
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
    state: StateOut
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


def item_views_from_wire(data: Any) -> list[ItemView]:
    return [ItemView.from_wire(x) for x in data["items"]]


VIEW_LISTS = ("carrying", "lapsed", "stalled")
