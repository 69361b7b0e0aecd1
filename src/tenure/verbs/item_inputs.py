"""The inputs of the item and claim verbs (:mod:`tenure.verbs.items`): what each takes.

They shape the wire and publish the service's limits; the rules are the service's. A verb on
one item has its id in the path (``/v1/items/{id}/claim``): its input (``ClaimIn``) derives
from :class:`OnItem`, and the verb table derives the body's model from it (the same name and
fields, without ``id``). A completion's ``follow_ups`` as a client sends them are here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from tenure.core.validate import MAX_FOLLOW_UPS, MAX_LIMIT
from tenure.core.work import MAX_EXIT_STATUS, ReleaseReason
from tenure.verbs.call import Send, listed, unless_false
from tenure.verbs.fields import (
    AGENT_PATTERN,
    LINE_PATTERN,
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
    ProgressMessage,
    Reason,
    Session,
    Task,
    Title,
    Ttl,
    Whole,
    text_field,
)
from tenure.verbs.item_replies import Status
from tenure.verbs.leases import ExtendIn

#: a page's end in ``GET /v1/items``: ``priority:created_at:id``
CURSOR_PATTERN = r"^-?[0-9]{1,19}:-?[0-9]{1,19}:[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


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


class OnItem(Body):
    """The input of a verb on one item: its ``id`` travels in the path (``/v1/items/{id}/…``),
    the other fields in the JSON body (whose model the verb table derives)."""

    id: ItemId


class ItemPatch(OnItem):
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


#: a takeover's flag, sent only when set (an older server takes a request without it)
Takeover = Annotated[bool | None, Send(unless_false)]
TakeoverReason = Annotated[
    Reason | None, Field(description="why: required with `takeover` (kept in the transfer)")
]


class ClaimIn(OnItem):
    """``takeover: true`` needs a ``reason``."""

    model_config = TAKEOVER_NEEDS_REASON
    ttl_ms: Ttl | None = None
    task: Task | None = None
    takeover: Annotated[
        Takeover,
        Field(
            description="take over an item assigned to someone else whose claim lapsed or "
            "stalled, or one whose claim was force-released (revoked), yours included; "
            "needs a `reason`"
        ),
    ] = None
    reason: TakeoverReason = None
    session: Session | None = None


class ItemRenewIn(OnItem):
    epoch: Annotated[Epoch | None, Field(description="default: the item's current epoch")] = None
    ttl_ms: Ttl | None = None


class ItemExtendIn(OnItem):
    """Exactly one of ``until`` and ``by_ms``."""

    model_config = ConfigDict(json_schema_extra=ExtendIn.model_config.get("json_schema_extra"))
    epoch: Annotated[Epoch | None, Field(description="default: the item's current epoch")] = None
    until: Instant | None = None
    by_ms: Annotated[
        Millis | None, Field(description="the new deadline is now + by_ms (capped at max_lease)")
    ] = None


class ItemReleaseIn(OnItem):
    epoch: Annotated[
        Epoch | None,
        Field(
            description="the claim to release: an epoch that is no longer the item's answers "
            "`released: false` and changes nothing (default: your session's live claim)"
        ),
    ] = None
    session: Session | None = None
    reason: Annotated[
        ReleaseReason | None,
        Field(
            description="why the claim ends, recorded on the transfer and the events: "
            "`command_exited` (a supervisor's command exited without completing the item), "
            "with `exit_status`"
        ),
    ] = None
    exit_status: Annotated[
        int | None,
        Field(
            ge=0,
            le=MAX_EXIT_STATUS,
            description="with `reason: command_exited`: the command's exit status as a shell "
            "reports it (128 + n for signal n)",
        ),
    ] = None


class ProgressIn(OnItem):
    epoch: Epoch
    message: ProgressMessage
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


#: a follow-up of a completion as a client gives it: ``{"title", "body"?, "priority"?,
#: "labels"?, "id"?}``, or its title alone
FollowUp = Mapping[str, Any] | str


def follow_ups_body(follow_ups: Sequence[FollowUp] | None) -> Any:
    """The ``follow_ups`` a client sends: a title alone stands for ``{"title": title}``;
    anything else goes as it is, for the server to name what is wrong with it."""
    if follow_ups is None or isinstance(follow_ups, str | bytes):
        return follow_ups
    if not isinstance(follow_ups, Sequence):
        return follow_ups
    return [{"title": f} if isinstance(f, str) else _as_plain(f) for f in follow_ups]


def _as_plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: listed(v) if k == "labels" else v for k, v in value.items()}
    return value


class CompleteIn(OnItem):
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
        Send(follow_ups_body),
    ] = None


class CancelIn(OnItem):
    reason: Reason


class ForceReleaseItemIn(OnItem):
    reason: Reason


class DispatchIn(OnItem):
    """``takeover: true`` needs a ``reason``."""

    model_config = TAKEOVER_NEEDS_REASON
    agent: Annotated[
        str | None,
        Field(
            max_length=64,
            json_schema_extra={
                "pattern": AGENT_PATTERN,
                "description": "the agent's name under the caller (`caller/<agent>`; default "
                "`agent-<instant>-<random>`, never an earlier agent's name): 1-64 letters, "
                "digits and . _ @ : / -, starting with a letter or digit; the whole name is at "
                "most 128 characters",
            },
        ),
    ] = None
    ttl_ms: Ttl | None = None
    task: Task | None = None
    session: Annotated[
        Session | None, Field(description="the session of the agent that will hold the claim")
    ] = None
    takeover: Annotated[
        Takeover,
        Field(
            description="dispatch again an item whose claim lapsed, stalled or was revoked: "
            "yours, your agents', or one you may force-release; needs a `reason`"
        ),
    ] = None
    reason: TakeoverReason = None


class ReassignIn(OnItem):
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


class ListItemsIn(Body):
    status: Status | None = None
    assignee: Annotated[str | None, text_field(256, "assigned to")] = None
    label: Annotated[str | None, text_field(64, "with this label")] = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 100
    after: Annotated[
        str | None,
        Field(
            description="the `next` of the previous page: the page after it",
            json_schema_extra={"maxLength": 180, "pattern": CURSOR_PATTERN},
        ),
    ] = None


class NoInput(Body):
    pass


class QueueOfIn(Body):
    principal: Annotated[
        str,
        Field(
            json_schema_extra={
                "description": "a principal's name (URL-encoded: `jo%2Freviewer-1`)",
                "minLength": 1, "maxLength": 256, "pattern": LINE_PATTERN,
            }
        ),
    ]  # fmt: skip


class ReadyIn(Body):
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 50


class BriefingIn(Body):
    ready: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="how many ready items to show")] = 5
