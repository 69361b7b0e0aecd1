"""The replies of the lease, fenced-register, principal and token-floor verbs: their exact JSON
fields.

Each model describes what a core model's ``to_dict`` sends (the OpenAPI document and the MCP
tools publish these schemas; the route tests validate replies against them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
    scope: Annotated[
        Literal["key", "subtree"],
        Field(description="`subtree`: the lease (on a key ending in `/`) holds every key under it"),
    ]


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


class ReleaseAllReply(Out):
    released: Annotated[list[LeaseOut], Field(description="the leases it ended, by key")]


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


class SigninCodeReply(Out):
    code: Annotated[str, Field(description="good once, for a minute: `<server>/#signin=<code>`")]
    principal: str
    expires_at: int


class TokenOut(Out):
    token_id: str
    created_at: int
    expires_at: int | None = Field(description="when it expires (null: never)")
    revoked_at: int | None = Field(description="when it was revoked (null: it is not)")


class PrincipalsReply(Out):
    principals: list[PrincipalOut]


class PrincipalShowReply(Out):
    principal: PrincipalOut
    tokens: list[TokenOut] = Field(description="its tokens, oldest first; never their secrets")


class PrincipalRolesReply(Out):
    principal: PrincipalOut


class PrincipalRemovedReply(Out):
    principal: PrincipalOut
    revoked: list[str] = Field(description="the ids of the tokens removing it revoked")


class FloorReply(Out):
    floor: int = Field(description="every token granted from now on is larger than this")
    max_token: int = Field(description="the largest token ever granted in this database")
