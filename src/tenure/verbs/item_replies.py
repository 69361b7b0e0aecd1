"""The replies of the item and claim verbs (:mod:`tenure.verbs.items`): their schemas for the
OpenAPI document, and their reading back into the core's models (the client's side).

A list carries item summaries (:mod:`tenure.verbs.summaries`): a summary read back has an empty
``body`` and no ``result`` (``get_item`` has them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from tenure.core.claims import Briefing, Claim, Completion, ItemRelease
from tenure.core.items import REASONS, Item, ItemView, Transfer
from tenure.core.work import Failure
from tenure.verbs.lists import Page
from tenure.verbs.replies import LeaseOut, Out
from tenure.verbs.schema import AliasedOut, wire

#: an item's status
Status = Literal["open", "in_progress", "blocked", "done", "cancelled", "parked"]


@wire(
    Failure,
    types_={"reason": Literal["lapsed", "command_exited"]},
    describe={
        "epoch": "the claim that failed",
        "reason": "`lapsed`: its holder let the claim run out; `command_exited`: its "
        "supervised command exited with a non-zero status without completing it",
        "at": "epoch ms: when",
        "exit_status": "`command_exited`: the command's exit status",
    },
)
class FailureOut(Out):
    pass


@wire(
    Item,
    exclude=("stalled_epoch", "body_chars", "counted_epoch"),
    types_={"status": Status},
    describe={
        "revoked": "its claim was force-released: the assignee stays, but even it needs "
        "a takeover with a reason (or a reassign) to claim it again",
        "attempts": "how many times it was claimed since it was created or last reopened",
        "failures": "its failed attempts since it was created or last reopened, oldest first: "
        "at the policy's `max_attempts` it is `parked`",
    },
)
class ItemOut(Out):
    pass


@wire(
    Transfer,
    alias={"from_": "from"},
    types_={"reason": Annotated[str, Field(json_schema_extra={"enum": list(REASONS)})]},
    describe={
        "exit_status": "a release with note `command_exited`: the exit status of the "
        "supervised command that ended without completing the item"
    },
)
class TransferOut(AliasedOut):
    pass


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


@wire(
    ItemView,
    first=("item", "lease", "lease_state", "state"),
    types_={"lease_state": LeaseState, "state": StateOut},
)
class ItemViewOut(Out):
    pass


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
    attempts: int
    failures: list[FailureOut]


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


@wire(Claim)
class ClaimReply(Out):
    pass


@wire(ItemRelease)
class ItemReleaseReply(Out):
    pass


@wire(Completion, describe={"follow_ups": "the items this completion created (on a repeat too)"})
class CompletionReply(Out):
    pass


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


@wire(
    Briefing,
    describe={"stalled": "live claims of yours and your agents' that stopped making progress"},
)
class BriefingReply(Out):
    pass


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


def items_reply(data: Any) -> list[Item]:
    """The items of a list's reply (summaries: an empty ``body``, no ``result``)."""
    return [Item.from_wire(x) for x in data["items"]]


def items_page_reply(data: Any) -> Page[Item]:
    return Page(items_reply(data), data.get("next"), bool(data.get("truncated")))
