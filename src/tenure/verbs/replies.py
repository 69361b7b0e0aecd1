"""The replies of the lease, fenced-register, principal and token-floor verbs: their exact JSON
fields.

Each model describes what a core model's ``to_dict`` sends, derived from the model itself
(:func:`tenure.verbs.schema.wire_model`): its fields, with the descriptions and narrower types
the wire adds. A reply that wraps a model (``{"lease": …}``) is written out. The OpenAPI
document and the MCP tools publish these schemas; the route tests validate replies against them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tenure.core import models as m
from tenure.core.token_floor import TokenFloor
from tenure.verbs.schema import Out as Out
from tenure.verbs.schema import wire

Roles = list[Literal["admin", "supervisor"]]


@wire(
    m.Lease,
    first=("key", "holder", "session"),
    describe={
        "session": 'the holder\'s session (`""`: its default)',
        "scope": "`subtree`: the lease (on a key ending in `/`) holds every key under it",
        "semaphore": "a semaphore's slot lease: the semaphore's key (`gpu`); null: a plain lease",
        "slot": "a slot lease's slot, as in its key (`gpu#slot/1`: 1); null: a plain lease",
        "slots": "a slot lease's semaphore's number of slots; null: a plain lease",
    },
)
class LeaseOut(Out):
    pass


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


@wire(m.LostLease)
class LostOut(Out):
    pass


@wire(m.RenewAllResult)
class RenewAllReply(Out):
    pass


@wire(m.ReleaseAllResult, describe={"released": "the leases it ended, by key"})
class ReleaseAllReply(Out):
    pass


@wire(m.ExtendResult)
class ExtendReply(Out):
    pass


@wire(
    m.ReleaseResult,
    types_={"reason": Literal["no_lease", "ended", "stale_token"] | None},
    describe={
        "reason": "why nothing was released (null when it was): `no_lease` (none was "
        "ever granted on the key), `ended` (the lease is over: `lease.state` says how), "
        "`stale_token` (your lease lives on under a newer token: `lease.token`; release "
        "that one)"
    },
)
class ReleaseReply(Out):
    pass


@wire(m.ForceReleaseResult)
class ForceReleaseReply(Out):
    pass


@wire(m.FencedWrite, exclude=("writer",))
class FencedWriteReply(Out):
    pass


@wire(m.FencedValue)
class FencedValueReply(Out):
    pass


@wire(m.Event)
class EventOut(Out):
    pass


class EventsReply(Out):
    events: list[EventOut]
    next: Annotated[
        int,
        Field(description="the cursor to go on from: past every event examined, matched or not"),
    ]


@wire(m.Principal, types_={"roles": Roles})
class PrincipalOut(Out):
    pass


class MeReply(Out):
    principal: PrincipalOut


@wire(
    m.IssuedToken,
    first=("principal", "token"),
    describe={"expires_at": "when the token expires (null: never)"},
)
class PrincipalReply(Out):
    pass


class SigninCodeReply(Out):
    code: Annotated[str, Field(description="good once, for a minute: `<server>/#signin=<code>`")]
    principal: str
    expires_at: int


@wire(
    m.TokenInfo,
    describe={
        "expires_at": "when it expires (null: never)",
        "revoked_at": "when it was revoked (null: it is not)",
    },
)
class TokenOut(Out):
    pass


class PrincipalsReply(Out):
    principals: list[PrincipalOut]


@wire(m.PrincipalInfo, describe={"tokens": "its tokens, oldest first; never their secrets"})
class PrincipalShowReply(Out):
    pass


class PrincipalRolesReply(Out):
    principal: PrincipalOut


@wire(m.RemovedPrincipal, describe={"revoked": "the ids of the tokens removing it revoked"})
class PrincipalRemovedReply(Out):
    pass


@wire(
    TokenFloor,
    describe={
        "floor": "every token granted from now on is larger than this",
        "max_token": "the largest token ever granted in this database",
    },
)
class FloorReply(Out):
    pass
