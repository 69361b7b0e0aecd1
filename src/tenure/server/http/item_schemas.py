"""Request and response bodies of the item and claim routes (:mod:`tenure.server.http.items`).

Like :mod:`tenure.server.http.schemas`, they shape the wire and publish the service's limits; the
rules are the service's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from tenure.service.queue_items import MAX_FOLLOW_UPS
from tenure.verbs.fields import (
    AGENT_PATTERN,
    TEXT_PATTERN,
    Body,
    Epoch,
    Instant,
    ItemBody,
    ItemId,
    Labels,
    Millis,
    OpId,
    Priority,
    Reason,
    Session,
    Task,
    Title,
    Ttl,
    Whole,
    text_schema,
)
from tenure.verbs.leases import ExtendIn
from tenure.verbs.replies import EventOut, LeaseOut, Out

#: ``takeover: true`` needs a ``reason`` (JSON Schema for what the service checks)
TAKEOVER_NEEDS_REASON = ConfigDict(
    json_schema_extra={
        "anyOf": [
            {"properties": {"takeover": {"enum": [False, None]}}},
            {"required": ["reason"], "properties": {"reason": {"type": "string"}}},
        ]
    }
)


class ItemIn(Body):
    """``parent_epoch`` needs ``parent``."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"parent_epoch": {"type": "null"}}},
                {"required": ["parent"], "properties": {"parent": {"type": "string"}}},
            ]
        }
    )
    id: Annotated[
        ItemId | None, Field(description="the id (default: a random `it-…`); 422 if taken")
    ] = None
    title: Title
    body: ItemBody | None = None
    priority: Priority | None = None
    labels: Labels | None = None
    parent: Annotated[ItemId | None, Field(description="an existing item (else 404)")] = None
    parent_epoch: Annotated[
        Epoch | None,
        Field(
            description="create the item only while this is the parent's current epoch and "
            "you hold it (fenced like progress: `409 stale_token`, `403 not_holder`); needs "
            "`parent`"
        ),
    ] = None


class ItemPatch(Body):
    """Only the fields given change; ``status: in_progress`` claims the item for the caller."""

    title: Title | None = None
    body: ItemBody | None = None
    priority: Priority | None = None
    labels: Labels | None = None
    status: Annotated[
        Literal["open", "blocked", "in_progress"] | None,
        Field(
            description="`in_progress` claims the item (as `claim` does); done and "
            "cancelled come from `complete` and `cancel`"
        ),
    ] = None


class ClaimIn(Body):
    """``takeover: true`` needs a ``reason``."""

    model_config = TAKEOVER_NEEDS_REASON
    ttl_ms: Ttl | None = None
    task: Task | None = None
    takeover: Annotated[
        bool | None,
        Field(
            description="take over an item assigned to someone else whose claim lapsed or "
            "stalled, or one whose claim was force-released (revoked), yours included; "
            "needs a `reason`"
        ),
    ] = None
    reason: Annotated[
        Reason | None, Field(description="why: required with `takeover` (kept in the transfer)")
    ] = None
    session: Session | None = None


class ItemRenewIn(Body):
    epoch: Annotated[Epoch | None, Field(description="default: the item's current epoch")] = None
    ttl_ms: Ttl | None = None


class ItemExtendIn(Body):
    """Exactly one of ``until`` and ``by_ms``."""

    model_config = ConfigDict(json_schema_extra=ExtendIn.model_config.get("json_schema_extra"))
    epoch: Annotated[Epoch | None, Field(description="default: the item's current epoch")] = None
    until: Instant | None = None
    by_ms: Annotated[
        Millis | None, Field(description="the new deadline is now + by_ms (capped at max_lease)")
    ] = None


class ItemReleaseIn(Body):
    epoch: Annotated[
        Epoch | None,
        Field(
            description="the claim to release: an epoch that is no longer the item's answers "
            "`released: false` and changes nothing (default: your session's live claim)"
        ),
    ] = None
    session: Session | None = None


class ProgressIn(Body):
    epoch: Epoch
    message: Annotated[str, Field(json_schema_extra=text_schema(4096, "what happened"))]
    percent: Annotated[int, Field(ge=0, le=100), Whole] | None = None
    data: Annotated[
        dict[str, Any] | None,
        Field(description="a small JSON object, at most max_meta_bytes (else 413 too_large)"),
    ] = None


class FollowUpIn(Body):
    """An item that a completion creates under the completed one."""

    title: Title
    body: ItemBody | None = None
    priority: Priority | None = None
    labels: Labels | None = None
    id: Annotated[
        ItemId | None, Field(description="the id (default: a random `it-…`); 409 if taken")
    ] = None


class CompleteIn(Body):
    epoch: Epoch
    result: Annotated[Any, Field(description="any JSON value, at most max_value_bytes")] = None
    op_id: OpId | None = None
    follow_ups: Annotated[
        list[FollowUpIn] | None,
        Field(
            max_length=MAX_FOLLOW_UPS,
            description="items to create under this one, in the completion's transaction: "
            "all or none, and once per `op_id` (a repeat returns the same ones)",
        ),
    ] = None


class CancelIn(Body):
    reason: Reason


class ForceReleaseItemIn(Body):
    reason: Reason


class DispatchIn(Body):
    """``takeover: true`` needs a ``reason``."""

    model_config = TAKEOVER_NEEDS_REASON
    agent: Annotated[
        str | None,
        Field(
            max_length=64,
            json_schema_extra={
                "pattern": AGENT_PATTERN,
                "description": "the agent's name under the caller (`caller/<agent>`; default "
                "`agent-<random>`): 1-64 letters, digits and . _ @ : / -, starting with a "
                "letter or digit; the whole name is at most 128 characters",
            },
        ),
    ] = None
    ttl_ms: Ttl | None = None
    task: Task | None = None
    session: Annotated[
        Session | None, Field(description="the session of the agent that will hold the claim")
    ] = None
    takeover: Annotated[
        bool | None,
        Field(
            description="dispatch again an item whose claim lapsed, stalled or was revoked: "
            "yours, your agents', or one you may force-release; needs a `reason`"
        ),
    ] = None
    reason: Annotated[
        Reason | None, Field(description="why: required with `takeover` (kept in the transfer)")
    ] = None


class ReassignIn(Body):
    to: Annotated[
        str,
        Field(
            json_schema_extra={
                "minLength": 1,
                "maxLength": 256,
                "pattern": TEXT_PATTERN,
                "description": "the principal that gets the item (404 if there is none)",
                "examples": ["jo"],
            }
        ),
    ]
    reason: Reason


# responses -----------------------------------------------------------------------------------
class ItemOut(Out):
    id: str
    title: str
    body: str
    status: Literal["open", "in_progress", "blocked", "done", "cancelled"]
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
    reason: Literal[
        "claimed",
        "released",
        "expired",
        "taken_over",
        "force_released",
        "completed",
        "cancelled",
        "reassigned",
    ]
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
    status: Literal["open", "in_progress", "blocked", "done", "cancelled"]
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
