"""Request and response bodies of the REST API, for parsing and for the OpenAPI document.

The models shape the wire: types, required fields, no unknown fields. The rules (key and text
limits, the policy's TTL bounds, who may do what) live in the service, which checks every value;
the models only *publish* those rules (``json_schema_extra``) so that the OpenAPI document
describes exactly what the server accepts. Limits that depend on the deployment's policy are
marked with ``x-tenure-limit`` and filled in by :mod:`tenure.server.http.openapi`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tenure.core.validate import (
    MAX_OP_ID_CHARS,
    MAX_REASON_CHARS,
    MAX_SESSION_BYTES,
    MAX_TASK_CHARS,
    MAX_WAIT_MS,
)
from tenure.service.principals import MAX_TOKEN_TTL_MS

MAX_INT = 2**63 - 1
MAX_RENEW_KEYS = 1000  # keys one renew-all may name
LIMIT = "x-tenure-limit"  # marks a bound that openapi.py takes from the policy

# What the service accepts, as ECMA-262 regular expressions (the dialect of JSON Schema).
CONTROL = r"\x00-\x08\x0b-\x1f\x7f-\x9f"  # control characters, but tab and newline
SPACE = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"  # + str.isspace
KEY_CONTROL = r"\x00-\x1f\x7f-\x9f"  # every control character: none is allowed in a key
KEY_PATTERN = f"^[^{KEY_CONTROL}]+$"  # JSON text cannot carry lone surrogates anyway
LEASE_KEY_PATTERN = f"^(?!items/)[^{KEY_CONTROL}]+$"  # the generic lease verbs: not an item's
#: an item id as a filter: text that makes a key (``items/<id>``), so no control characters
ITEM_FILTER_PATTERN = f"^[^{KEY_CONTROL}]*[^{SPACE}][^{KEY_CONTROL}]*$"
SESSION_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"  # may be empty: the default session
TEXT_PATTERN = f"^[^{CONTROL}]*[^{SPACE}][^{CONTROL}]*$"  # no control characters, not blank
FILTER_PATTERN = f"^[^{CONTROL}]*$"
LINE = r"\x00-\x08\x0a-\x1f\x7f-\x9f"  # control characters, but tab: one line of text
LINE_PATTERN = f"^[^{LINE}]*[^{SPACE}][^{LINE}]*$"  # a path segment of text (routes match no \n)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$"
ITEM_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
AGENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,63}$"  # a principal name's rules, 64 at most
TOKEN_ID_PATTERN = r"^[0-9a-f]{12}$"


def key_schema(description: str = "the lease key", *, lease_verb: bool = False) -> dict[str, Any]:
    """``lease_verb``: the key of a generic lease verb, which refuses the keys of items."""
    items = (
        "; not under `items/` (an item's claim: use the item's own routes, else 422)"
        if lease_verb
        else ""
    )
    return {
        "minLength": 1,
        "maxLength": 512,
        "pattern": LEASE_KEY_PATTERN if lease_verb else KEY_PATTERN,
        "description": f"{description}: 1 to max_key_bytes bytes of UTF-8 (a longer key is "
        f"refused with 413 too_large), no control characters{items}",
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
LeaseKey = Annotated[str, Field(json_schema_extra=key_schema(lease_verb=True))]
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
    key: LeaseKey
    ttl_ms: Ttl | None = None
    task: Task | None = None
    meta: Annotated[
        dict[str, Any] | None,
        Field(description="a small JSON object, at most max_meta_bytes (else 413 too_large)"),
    ] = None
    wait_ms: WaitMs | None = None
    session: Session | None = None


class RenewIn(Body):
    key: LeaseKey
    token: Token
    ttl_ms: Ttl | None = None


class RenewAllIn(Body):
    keys: Annotated[list[Key], Field(max_length=MAX_RENEW_KEYS)] | None = None
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
    key: LeaseKey
    token: Token
    until: Instant | None = None
    by_ms: Annotated[
        Millis | None, Field(description="the new deadline is now + by_ms (capped at max_lease)")
    ] = None


class ReleaseIn(Body):
    key: LeaseKey
    token: Annotated[
        Token | None,
        Field(
            description="the lease of this token, from any session of yours (default: the "
            "live lease of your `session`)"
        ),
    ] = None
    session: Session | None = None


class ForceReleaseIn(Body):
    key: LeaseKey
    reason: Reason


class FencedWriteIn(Body):
    key: LeaseKey
    token: Token
    value: Annotated[Any, Field(description="any JSON value, at most max_value_bytes")]
    op_id: OpId | None = None


class PrincipalIn(Body):
    name: Name
    kind: Literal["human", "agent", "service"] = "agent"
    roles: Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2)] = []
    parent: Name | None = None
    ttl_ms: (
        Annotated[
            int,
            Field(ge=1000, le=MAX_TOKEN_TTL_MS, description="the token expires this long from now"),
            Whole,
        ]
        | None
    ) = None


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
    truncated: Annotated[
        bool,
        Field(
            description="the reply stopped early (the page cap or the server's list budget): "
            "go on with `after` set to `next`"
        ),
    ]
    next: Annotated[str | None, Field(description="the key to pass as `after` next; or null")]


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
    reason: Annotated[
        Literal["no_lease", "ended", "stale_token"] | None,
        Field(
            description="why nothing was released (null when it was): `no_lease` (none was "
            "ever granted on the key), `ended` (the lease is over: `lease.state` says how), "
            "`stale_token` (your lease lives on under a newer token: `lease.token`; release "
            "that one)"
        ),
    ] = None


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
    next: Annotated[
        int,
        Field(description="the cursor to go on from: past every event examined, matched or not"),
    ]


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
    expires_at: int | None = Field(description="when the token expires (null: never)")


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
