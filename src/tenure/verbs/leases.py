"""The lease verbs and the fenced register: their inputs and their entries in the verb table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from tenure.core.models import Lease, Principal
from tenure.verbs.fields import (
    MAX_RENEW_KEYS,
    Body,
    Instant,
    Key,
    LeaseKey,
    Millis,
    OpId,
    Reason,
    Session,
    Task,
    Token,
    Ttl,
    WaitMs,
)
from tenure.verbs.replies import LeaseReply
from tenure.verbs.table import Services, Verb

#: the statuses every verb of a caller may meet: a bad body, no token, too large a value
ASKED = (400, 401, 413, 422)


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


def lease_reply(lease: Lease) -> dict[str, Any]:
    return {"lease": lease.to_dict()}


def lease_of_reply(data: Any) -> Lease:
    return Lease.from_wire(data["lease"])


class GetLeaseIn(Body):
    key: Key


def _get_lease(services: Services, me: Principal, a: GetLeaseIn) -> Lease:
    return services.leases.get(a.key)


def _acquire(services: Services, me: Principal, a: AcquireIn) -> Lease:
    return services.leases.acquire(me, a.key, a.ttl_ms, a.task, a.meta, a.session)


def _renew(services: Services, me: Principal, a: RenewIn) -> Lease:
    return services.leases.renew(me, a.key, a.token, a.ttl_ms)


def _never_again(_: Mapping[str, Any]) -> bool:
    """Re-acquiring from a session shared by several processes would be a silent second grant
    of a lease another process just took: see the client's retry rules."""
    return False


ACQUIRE: Verb[AcquireIn, Lease] = Verb(
    "acquire", "POST", "/v1/leases/acquire", AcquireIn, _acquire, lease_reply, lease_of_reply,
    LeaseReply, problems=(*ASKED, 409), tags=("leases",), repeatable=_never_again, grouped=True,
    doc="Acquire `key`, or renew it if your `session` holds it; `wait_ms` long-polls while it "
    "is held. Another session of yours holding it is `409 lease_held`, like anyone else.",
)  # fmt: skip
RENEW: Verb[RenewIn, Lease] = Verb(
    "renew", "POST", "/v1/leases/renew", RenewIn, _renew, lease_reply, lease_of_reply,
    LeaseReply, problems=(*ASKED, 403, 404, 409), tags=("leases",), grouped=True,
)  # fmt: skip
GET_LEASE: Verb[GetLeaseIn, Lease] = Verb(
    "get_lease", "GET", "/v1/leases/{key:path}", GetLeaseIn, _get_lease, lease_reply,
    lease_of_reply, LeaseReply, problems=(401, 404, 413, 422), tags=("leases",),
    doc="The latest lease on `key` (URL-encoded) with its `state`, live or not. A key that "
    "names a POST route (`acquire`, `release`, …) and was never leased: `405`.",
)  # fmt: skip
