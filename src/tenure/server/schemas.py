"""Request and response bodies of the REST API, for parsing and for the OpenAPI document.

The models shape the wire: types, required fields, no unknown fields. The rules (key and text
limits, the policy's TTL bounds, who may do what) live in the service, which checks every value;
the models only *publish* those rules (``json_schema_extra``) so that the OpenAPI document
describes exactly what the server accepts. Limits that depend on the deployment's policy are
marked with ``x-tenure-limit`` and filled in by :mod:`tenure.server.openapi`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tenure.core.validate import (
    MAX_OP_ID_CHARS,
    MAX_REASON_CHARS,
    MAX_SESSION_BYTES,
    MAX_TASK_CHARS,
)
from tenure.work import MAX_BODY_CHARS, MAX_LABELS, MAX_TITLE_CHARS

MAX_INT = 2**63 - 1
MAX_WAIT_MS = 300_000
LIMIT = "x-tenure-limit"  # marks a bound that openapi.py takes from the policy

# What the service accepts, as ECMA-262 regular expressions (the dialect of JSON Schema).
CONTROL = r"\x00-\x08\x0b-\x1f\x7f-\x9f"  # control characters, but tab and newline
SPACE = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"  # + str.isspace
KEY_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"  # JSON text cannot carry lone surrogates anyway
SESSION_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"  # may be empty: the default session
TEXT_PATTERN = f"^[^{CONTROL}]*[^{SPACE}][^{CONTROL}]*$"  # no control characters, not blank
FILTER_PATTERN = f"^[^{CONTROL}]*$"
LINE = r"\x00-\x08\x0a-\x1f\x7f-\x9f"  # control characters, but tab: one line of text
LINE_PATTERN = f"^[^{LINE}]*[^{SPACE}][^{LINE}]*$"  # a path segment of text (routes match no \n)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$"
ITEM_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
AGENT_PATTERN = r"^[A-Za-z0-9._@:/-]{1,64}$"
TOKEN_ID_PATTERN = r"^[0-9a-f]{12}$"


def key_schema(description: str = "the lease key") -> dict[str, Any]:
    return {
        "minLength": 1,
        "maxLength": 512,
        "pattern": KEY_PATTERN,
        "description": f"{description}: 1 to max_key_bytes bytes of UTF-8 (a longer key is "
        "refused with 413 too_large), no control characters",
        "examples": ["jobs/nightly-report"],
        LIMIT: "max_key_bytes",
    }


def text_schema(max_chars: int, description: str) -> dict[str, Any]:
    return {
        "minLength": 1,
        "maxLength": max_chars,
        "pattern": TEXT_PATTERN,
        "description": f"{description}: not blank, no control characters but tab and newline",
    }


def _whole(value: object) -> object:
    """JSON Schema counts ``35.0`` as an integer; so does the API (never ``true`` or ``"35"``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = BeforeValidator(_whole)  # after the bounds, so they stay in the integer's own schema
Key = Annotated[str, Field(json_schema_extra=key_schema())]
Token = Annotated[int, Field(ge=1, le=MAX_INT, description="a fencing token"), Whole]
Ttl = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_INT,
        description="the lease's term in milliseconds, between the policy's min_ttl and max_ttl",
        json_schema_extra={LIMIT: "ttl"},
    ),
    Whole,
]
Millis = Annotated[int, Field(ge=1, le=MAX_INT), Whole]
Instant = Annotated[int, Field(ge=0, le=MAX_INT, description="epoch milliseconds (UTC)"), Whole]
WaitMs = Annotated[
    int,
    Field(ge=0, le=MAX_WAIT_MS, description="long-poll up to this long while the key is held"),
    Whole,
]
Task = Annotated[str, Field(json_schema_extra=text_schema(MAX_TASK_CHARS, "what the lease serves"))]
Reason = Annotated[
    str, Field(json_schema_extra=text_schema(MAX_REASON_CHARS, "why (recorded in the event)"))
]
OpId = Annotated[str, Field(json_schema_extra=text_schema(MAX_OP_ID_CHARS, "an idempotency key"))]
Session = Annotated[
    str,
    Field(
        json_schema_extra={
            "maxLength": MAX_SESSION_BYTES,
            "pattern": SESSION_PATTERN,
            "description": "the holder's session: one running process of the caller (a "
            "`tenure run`, an agent's connection); at most 128 bytes of UTF-8, no control "
            "characters; absent or empty: the caller's default session. Sessions of one "
            "principal exclude each other like strangers",
            "examples": ["web-2"],
        }
    ),
]
Name = Annotated[
    str,
    Field(
        json_schema_extra={
            "pattern": NAME_PATTERN,
            "description": "1-128 characters: letters, digits and . _ @ : / -",
        }
    ),
]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AcquireIn(Body):
    key: Key
    ttl_ms: Ttl | None = None
    task: Task | None = None
    meta: Annotated[
        dict[str, Any] | None,
        Field(description="a small JSON object, at most max_meta_bytes (else 413 too_large)"),
    ] = None
    wait_ms: WaitMs | None = None
    session: Session | None = None


class RenewIn(Body):
    key: Key
    token: Token
    ttl_ms: Ttl | None = None


class RenewAllIn(Body):
    keys: Annotated[list[Key], Field(max_length=1000)] | None = None
    session: Annotated[
        Session | None,
        Field(description="renew only this session's leases (default: every session's)"),
    ] = None


class ExtendIn(Body):
    """Exactly one of ``until`` and ``by_ms``."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["until"], "properties": {"until": {"type": "integer"}}},
                {"required": ["by_ms"], "properties": {"by_ms": {"type": "integer"}}},
            ]
        }
    )
    key: Key
    token: Token
    until: Instant | None = None
    by_ms: Annotated[
        Millis | None, Field(description="the new deadline is now + by_ms (capped at max_lease)")
    ] = None


class ReleaseIn(Body):
    key: Key
    token: Annotated[
        Token | None,
        Field(
            description="the lease of this token, from any session of yours (default: the "
            "live lease of your `session`)"
        ),
    ] = None
    session: Session | None = None


class ForceReleaseIn(Body):
    key: Key
    reason: Reason


class FencedWriteIn(Body):
    key: Key
    token: Token
    value: Annotated[Any, Field(description="any JSON value, at most max_value_bytes")]
    op_id: OpId | None = None


class PrincipalIn(Body):
    name: Name
    kind: Literal["human", "agent", "service"] = "agent"
    roles: Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2)] = []
    parent: Name | None = None


# items and claims ----------------------------------------------------------------------------
ItemId = Annotated[
    str,
    Field(
        json_schema_extra={
            "pattern": ITEM_ID_PATTERN,
            "description": "an item id: 1-128 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit",
            "examples": ["it-1f2e3d4c5b"],
        }
    ),
]
Title = Annotated[str, Field(json_schema_extra=text_schema(MAX_TITLE_CHARS, "what the work is"))]
ItemBody = Annotated[
    str,
    Field(
        json_schema_extra={
            "maxLength": MAX_BODY_CHARS,
            "pattern": FILTER_PATTERN,
            "description": "the details, may be empty: no control characters but tab and newline",
        }
    ),
]
Priority = Annotated[
    int, Field(ge=0, le=1000, description="0 the most urgent (the default is 2)"), Whole
]
Label = Annotated[str, Field(json_schema_extra=text_schema(64, "a label"))]
Labels = Annotated[
    list[Label], Field(max_length=MAX_LABELS, description="labels (repeats are dropped)")
]
Epoch = Annotated[
    int,
    Field(ge=1, le=MAX_INT, description="the claim's epoch (the token of its lease)"),
    Whole,
]


class ItemIn(Body):
    id: Annotated[
        ItemId | None, Field(description="the id (default: a random `it-…`); 422 if taken")
    ] = None
    title: Title
    body: ItemBody | None = None
    priority: Priority | None = None
    labels: Labels | None = None
    parent: Annotated[ItemId | None, Field(description="an existing item (else 404)")] = None


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
    ttl_ms: Ttl | None = None
    task: Task | None = None
    takeover: Annotated[
        bool | None,
        Field(description="take over an item assigned to someone whose lease lapsed"),
    ] = None
    reason: Reason | None = None
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


class CompleteIn(Body):
    epoch: Epoch
    result: Annotated[Any, Field(description="any JSON value, at most max_value_bytes")] = None
    op_id: OpId | None = None


class CancelIn(Body):
    reason: Reason


class ForceReleaseItemIn(Body):
    reason: Reason


class DispatchIn(Body):
    agent: Annotated[
        str | None,
        Field(
            json_schema_extra={
                "pattern": AGENT_PATTERN,
                "description": "the agent's name under the caller (`caller/<agent>`; default "
                "`agent-<random>`); the whole name is at most 128 characters",
            }
        ),
    ] = None
    ttl_ms: Ttl | None = None
    task: Task | None = None
    session: Annotated[
        Session | None, Field(description="the session of the agent that will hold the claim")
    ] = None


# responses -----------------------------------------------------------------------------------
class Out(BaseModel):
    """A reply: exactly these fields (the schema says ``additionalProperties: false``)."""

    model_config = ConfigDict(extra="forbid")


class LeaseOut(Out):
    key: str
    holder: str
    session: Annotated[str, Field(description='the holder\'s session (`""`: its default)')]
    task: str | None
    token: int
    ttl_ms: int
    acquired_at: int
    renewed_at: int
    expires_at: int
    renewals: int
    meta: dict[str, Any]
    state: Literal["live", "released", "expired", "force_released", "taken_over"]


class LeaseReply(Out):
    lease: LeaseOut


class LeasesReply(Out):
    leases: list[LeaseOut]


class LostOut(Out):
    key: str
    reason: str
    token: int | None


class RenewAllReply(Out):
    renewed: list[LeaseOut]
    lost: list[LostOut]


class ExtendReply(Out):
    lease: LeaseOut
    extended: bool
    capped: bool
    requested_until: int
    granted_until: int


class ReleaseReply(Out):
    released: bool
    lease: LeaseOut | None


class ForceReleaseReply(Out):
    lease: LeaseOut
    actor: str
    reason: str


class FencedWriteReply(Out):
    key: str
    token: int
    value: Any
    version: int
    duplicate: bool


class FencedValueReply(Out):
    key: str
    token: int
    value: Any
    version: int
    updated_at: int


class EventOut(Out):
    id: int
    at: int
    type: str
    key: str | None
    holder: str | None
    task: str | None
    token: int | None
    actor: str | None
    reason: str | None
    data: dict[str, Any]


class EventsReply(Out):
    events: list[EventOut]
    next: int


class PrincipalOut(Out):
    name: str
    kind: Literal["human", "agent", "service"]
    roles: list[Literal["admin", "supervisor"]]
    parent: str | None


class MeReply(Out):
    principal: PrincipalOut


class PrincipalReply(Out):
    principal: PrincipalOut
    token: str
    token_id: str


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


class TransferOut(Out):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    item: str
    from_: str | None = Field(alias="from")
    to: str | None
    epoch: int
    reason: Literal[
        "claimed", "released", "expired", "taken_over", "force_released", "completed", "cancelled"
    ]
    actor: str
    at: int
    note: str | None


LeaseState = Literal["live", "stalled", "lapsed", "none"]


class ItemViewOut(Out):
    item: ItemOut
    lease: LeaseOut | None
    lease_state: LeaseState
    transfers: list[TransferOut]


class ItemReply(Out):
    item: ItemOut


class ItemsReply(Out):
    items: list[ItemOut]


class ItemViewsReply(Out):
    items: list[ItemViewOut]


class ClaimReply(Out):
    item: ItemOut
    lease: LeaseOut


class ItemReleaseReply(Out):
    released: bool
    item: ItemOut


class CompletionReply(Out):
    item: ItemOut
    duplicate: bool


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


class Problem(BaseModel):
    """An RFC 9457 problem document: ``code`` is stable, the optional fields explain it."""

    model_config = ConfigDict(extra="allow")
    type: str
    title: str
    status: int
    code: str
    detail: str
    key: str | None = None
    field: str | None = Field(None, description="the request field at fault")
    holder: str | None = None
    session: str | None = Field(
        None, description='the holder\'s session (lease_held, not_holder; `""`: its default)'
    )
    task: str | None = None
    expires_at: int | None = None
    token: int | None = None
    current_token: int | None = Field(None, description="the key's current token (stale_token)")
    reason: str | None = None
    actor: str | None = None
    what: str | None = None
    assignee: str | None = Field(None, description="the item's assignee (assigned_to_other)")
    lease_state: str | None = None
    lapsed_at: int | None = None
    limit: int | None = None
    size: int | None = None
    op_id: str | None = Field(None, description="the repeated op_id (idempotency_conflict)")
    version: int | None = Field(
        None, description="the register version the op_id wrote first (idempotency_conflict)"
    )


class Health(Out):
    status: Literal["ok"]
