"""Request and response bodies of the REST API, for parsing and for the OpenAPI document.

The models only shape the wire: types, required fields, no unknown fields. The rules (policy,
who may do what) live in the service, which validates everything again.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tenure.core.validate import KEY_PATTERN, MAX_OP_ID_CHARS, MAX_REASON_CHARS, MAX_TASK_CHARS

MAX_INT = 2**63 - 1
TEXT_PATTERN = (
    r"^[^\x00-\x08\x0b-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x08\x0b-\x1f\x7f-\x9f]*$"
)

Key = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        pattern=KEY_PATTERN,
        description="1 to max_key_bytes bytes of UTF-8, no control characters",
    ),
]
Token = Annotated[int, Field(ge=1, le=MAX_INT, description="a fencing token")]
Millis = Annotated[int, Field(ge=1, le=MAX_INT)]
Instant = Annotated[int, Field(ge=0, le=MAX_INT, description="epoch milliseconds (UTC)")]
Task = Annotated[str, Field(min_length=1, max_length=MAX_TASK_CHARS, pattern=TEXT_PATTERN)]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_REASON_CHARS, pattern=TEXT_PATTERN)]
OpId = Annotated[str, Field(min_length=1, max_length=MAX_OP_ID_CHARS, pattern=TEXT_PATTERN)]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$")]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")


class AcquireIn(Body):
    key: Key
    ttl_ms: Millis | None = None
    task: Task | None = None
    meta: dict[str, Any] | None = None
    wait_ms: Annotated[int, Field(ge=0, le=300_000)] | None = None


class RenewIn(Body):
    key: Key
    token: Token
    ttl_ms: Millis | None = None


class RenewAllIn(Body):
    keys: Annotated[list[Key], Field(max_length=1000)] | None = None


class ExtendIn(Body):
    key: Key
    token: Token
    until: Instant | None = None
    by_ms: Millis | None = None


class ReleaseIn(Body):
    key: Key
    token: Token | None = None


class ForceReleaseIn(Body):
    key: Key
    reason: Reason


class FencedWriteIn(Body):
    key: Key
    token: Token
    value: Any
    op_id: OpId | None = None


class PrincipalIn(Body):
    name: Name
    kind: Literal["human", "agent", "service"] = "agent"
    roles: Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2)] = []
    parent: Name | None = None


# responses -----------------------------------------------------------------------------------
class LeaseOut(BaseModel):
    key: str
    holder: str
    task: str | None
    token: int
    ttl_ms: int
    acquired_at: int
    renewed_at: int
    expires_at: int
    renewals: int
    meta: dict[str, Any]
    state: Literal["live", "released", "expired", "force_released", "taken_over"]


class LeaseReply(BaseModel):
    lease: LeaseOut


class LeasesReply(BaseModel):
    leases: list[LeaseOut]


class LostOut(BaseModel):
    key: str
    reason: str
    token: int | None


class RenewAllReply(BaseModel):
    renewed: list[LeaseOut]
    lost: list[LostOut]


class ExtendReply(BaseModel):
    lease: LeaseOut
    extended: bool
    capped: bool
    requested_until: int
    granted_until: int


class ReleaseReply(BaseModel):
    released: bool
    lease: LeaseOut | None


class ForceReleaseReply(BaseModel):
    lease: LeaseOut
    actor: str
    reason: str


class FencedWriteReply(BaseModel):
    key: str
    token: int
    value: Any
    version: int
    duplicate: bool


class FencedValueReply(BaseModel):
    key: str
    token: int
    value: Any
    version: int
    updated_at: int


class EventOut(BaseModel):
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


class EventsReply(BaseModel):
    events: list[EventOut]
    next: int


class PrincipalOut(BaseModel):
    name: str
    kind: str
    roles: list[str]
    parent: str | None


class MeReply(BaseModel):
    principal: PrincipalOut


class PrincipalReply(BaseModel):
    principal: PrincipalOut
    token: str
    token_id: str


class Problem(BaseModel):
    """An RFC 9457 problem document; ``code`` is stable, other fields explain it."""

    model_config = ConfigDict(extra="allow")
    type: str
    title: str
    status: int
    code: str
    detail: str


class Health(BaseModel):
    status: Literal["ok"]
