"""Reply models of the operations routes (events, stats), for validation and the OpenAPI."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tenure.verbs.fields import Body
from tenure.verbs.replies import Out, PrincipalOut


class Endings(Out):
    released: int
    expired: int
    force_released: int
    taken_over: int
    completed: int


class Window(Out):
    endings: Endings
    ended: int
    expired_share: float | None = Field(description="expired / ended; null with no endings")
    acquisitions: int
    conflicts: int


class HotKey(Out):
    key: str
    conflicts: int


class ExpiringHolder(Out):
    holder: str
    expired: int
    ended: int
    expired_share: float | None


class HoldTimes(Out):
    count: int = Field(description="endings in the last 24 h (up to the newest 100,000)")
    p50: int | None
    p99: int | None


class StatsReply(Out):
    now: int = Field(description="the server's clock, ms since the epoch")
    endings: Endings = Field(description="all-time counts by ending")
    acquisitions: int
    conflicts: int
    live_leases: int
    live_claims: int
    stalled_claims: int = Field(
        description="live claims that made no progress for their `stall_after` (recorded)"
    )
    windows: dict[str, Window] = Field(description='"1h" and "24h"')
    hottest_keys: list[HotKey] = Field(description="by conflicts in the last 24 h")
    expiring_holders: list[ExpiringHolder] = Field(description="by expiries in the last 24 h")
    hold_ms: HoldTimes


class Bucket(Out):
    start: int
    released: int
    expired: int
    force_released: int
    taken_over: int
    completed: int


class TimelineReply(Out):
    bucket_ms: int
    start: int
    end: int
    buckets: list[Bucket]


# principals ---------------------------------------------------------------------------------
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


class RolesIn(Body):
    roles: Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2)]


class PrincipalRolesReply(Out):
    principal: PrincipalOut


class PrincipalRemovedReply(Out):
    principal: PrincipalOut
    revoked: list[str] = Field(description="the ids of the tokens removing it revoked")
