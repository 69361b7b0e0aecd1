"""The principal verbs (who am I, add, list, show, change roles, remove, revoke a token) and the
token floor's: their inputs, their results as the clients read them, and their table entries.

Who may do what is :class:`tenure.service.principals.Principals`' (and
:mod:`tenure.service.token_floors`'); these entries only carry it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from tenure.core.models import IssuedToken, Principal
from tenure.core.models import PrincipalInfo as PrincipalInfo  # the clients' replies
from tenure.core.models import RemovedPrincipal as RemovedPrincipal
from tenure.core.signin import SigninCode
from tenure.core.token_floor import MAX_FLOOR, TokenFloor
from tenure.core.validate import MAX_TOKEN_TTL_MS
from tenure.verbs import call as c
from tenure.verbs import wire as w
from tenure.verbs.fields import TOKEN_ID_PATTERN, Body, Name, Whole
from tenure.verbs.replies import (
    FloorReply,
    MeReply,
    PrincipalRemovedReply,
    PrincipalReply,
    PrincipalRolesReply,
    PrincipalShowReply,
    PrincipalsReply,
    SigninCodeReply,
)
from tenure.verbs.table import Services, Verb, never
from tenure.verbs.wire import token_floor_from_wire

#: a principal's name in a path: slashes and all, but never the path of one of its tokens
#: (:class:`tenure.server.http.convertors.PrincipalPath`)
NAME_PATH = "/v1/principals/{name:principal}"
Roles = Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2), c.Send(c.listed)]


class NoArgs(Body):
    """A verb that takes nothing but the caller."""


class PrincipalIn(Body):
    name: Name
    kind: Literal["human", "agent", "service"] = "agent"
    roles: Roles = []
    parent: Name | None = None
    ttl_ms: (
        Annotated[
            int,
            Field(ge=1000, le=MAX_TOKEN_TTL_MS, description="the token expires this long from now"),
            Whole,
        ]
        | None
    ) = None


class NameIn(Body):
    name: Name


class RolesIn(Body):
    name: Name
    roles: Roles


class RevokeTokenIn(Body):
    name: Name
    token_id: Annotated[str, Field(json_schema_extra={"pattern": TOKEN_ID_PATTERN})]


class FloorIn(Body):
    floor: Annotated[
        int, Field(ge=0, le=MAX_FLOOR, description="every token from now on exceeds it"), Whole
    ]


def _principal(principal: Principal) -> dict[str, Any]:
    return {"principal": principal.to_dict()}


def _of_principal(data: Any) -> Principal:
    return Principal.from_wire(data["principal"])


def _whoami(services: Services, me: Principal, a: NoArgs) -> Principal:
    return me


def _add(services: Services, me: Principal, a: PrincipalIn) -> IssuedToken:
    return services.principals.create(me, a.name, a.kind, list(a.roles), a.parent, a.ttl_ms)


def _revoke(services: Services, me: Principal, a: RevokeTokenIn) -> None:
    services.principals.revoke(me, a.name, a.token_id)


def _nothing(_: None) -> None:
    return None


def _listed(services: Services, me: Principal, a: NoArgs) -> list[Principal]:
    return services.principals.listed(me)


def _principals(found: list[Principal]) -> dict[str, Any]:
    return {"principals": [p.to_dict() for p in found]}


def _of_principals(data: Any) -> list[Principal]:
    return [Principal.from_wire(p) for p in data["principals"]]


def _show(services: Services, me: Principal, a: NameIn) -> PrincipalInfo:
    principal, tokens = services.principals.show(me, a.name)
    return PrincipalInfo(principal, tuple(tokens))


def _set_roles(services: Services, me: Principal, a: RolesIn) -> Principal:
    return services.principals.set_roles(me, a.name, list(a.roles))


def _remove(services: Services, me: Principal, a: NameIn) -> RemovedPrincipal:
    principal, removal = services.principals.remove(me, a.name)
    return RemovedPrincipal(principal, removal.revoked)


def _floor(services: Services, me: Principal, a: NoArgs) -> TokenFloor:
    from tenure.service.token_floors import show_floor  # the client reads the table without it

    return show_floor(services.leases.store, me)


def _raise_floor(services: Services, me: Principal, a: FloorIn) -> TokenFloor:
    from tenure.service.token_floors import set_floor  # the client reads the table without it

    return set_floor(services.leases.store, me, a.floor)


def _signin_code(services: Services, me: Principal, a: NoArgs) -> SigninCode:
    return services.principals.signin_code(me)


SIGNIN_CODE: Verb[NoArgs, SigninCode] = Verb(
    name="signin_code",
    method="POST",
    path="/v1/signin/codes",
    input=NoArgs,
    run=_signin_code,
    wire=w.to_dict,
    parse=SigninCode.from_wire,
    reply=SigninCodeReply,
    problems=(400, 401, 413, 422),
    tags=("principals",),
    status=201,
    repeatable=never,
    doc="A one-time code that signs the web dashboard in as you: open `<server>/#signin=<code>` "
    "within a minute. It works once; only its hash is stored. The dashboard trades it "
    "(`POST /v1/signin`) for a token of yours that expires after 12 hours.",
)
WHOAMI: Verb[NoArgs, Principal] = Verb(
    name="whoami",
    method="GET",
    path="/v1/me",
    input=NoArgs,
    run=_whoami,
    wire=_principal,
    parse=_of_principal,
    reply=MeReply,
    problems=(401,),
    tags=("principals",),
)
ADD_PRINCIPAL: Verb[PrincipalIn, IssuedToken] = Verb(
    name="add_principal",
    method="POST",
    path="/v1/principals",
    input=PrincipalIn,
    run=_add,
    wire=w.to_dict,
    parse=IssuedToken.from_wire,
    reply=PrincipalReply,
    send={"roles": c.listed},
    problems=(400, 401, 403, 404, 409, 413, 422),
    tags=("principals",),
    status=201,
    repeatable=never,
)
REVOKE_TOKEN: Verb[RevokeTokenIn, None] = Verb(
    name="revoke_token",
    method="DELETE",
    path="/v1/principals/{name:path}/tokens/{token_id}",
    input=RevokeTokenIn,
    run=_revoke,
    wire=_nothing,
    parse=_nothing,
    reply=PrincipalReply,
    problems=(401, 403, 404, 422),
    tags=("principals",),
    status=204,
    repeatable=never,
    doc="Revoke one token of `name`: admins revoke anyone's, a principal its own, and an "
    "ancestor (the principal that dispatched `name`, and its own ancestors) those of the "
    "agents below it; anyone else gets `403 forbidden`. The `token_revoked` event names "
    "who revoked it.",
)
LIST_PRINCIPALS: Verb[NoArgs, list[Principal]] = Verb(
    name="list_principals",
    method="GET",
    path="/v1/principals",
    input=NoArgs,
    run=_listed,
    wire=_principals,
    parse=_of_principals,
    reply=PrincipalsReply,
    problems=(401,),
    tags=("principals",),
    doc="Every principal for an admin; for anyone else itself and the agents it dispatched "
    "(and theirs), by name.",
)
SHOW_PRINCIPAL: Verb[NameIn, PrincipalInfo] = Verb(
    name="show_principal",
    method="GET",
    path=NAME_PATH,
    input=NameIn,
    run=_show,
    wire=w.to_dict,
    parse=PrincipalInfo.from_wire,
    reply=PrincipalShowReply,
    problems=(401, 403, 404, 422),
    tags=("principals",),
    doc="`name`, with its tokens' ids, creation, expiry and revocation (never a secret): for "
    "admins, the principal itself and its ancestors.",
)
SET_ROLES: Verb[RolesIn, Principal] = Verb(
    name="set_roles",
    method="PATCH",
    path=NAME_PATH,
    input=RolesIn,
    run=_set_roles,
    wire=_principal,
    parse=_of_principal,
    reply=PrincipalRolesReply,
    send={"roles": c.listed},
    problems=(400, 401, 403, 404, 413, 422),
    tags=("principals",),
    doc="Replace the roles of `name` (admins only); recorded as `principal_roles_set`.",
)
REMOVE_PRINCIPAL: Verb[NameIn, RemovedPrincipal] = Verb(
    name="remove_principal",
    method="DELETE",
    path=NAME_PATH,
    input=NameIn,
    run=_remove,
    wire=w.to_dict,
    parse=RemovedPrincipal.from_wire,
    reply=PrincipalRemovedReply,
    problems=(401, 403, 404, 409, 422),
    tags=("principals",),
    repeatable=never,
    doc="Remove `name` (admins, and its ancestors): its live leases are force-released "
    "(`force_released`, reason `principal_removed`), its tokens revoked (`token_revoked`) and "
    "`principal_removed` is recorded, in one transaction. Refused with `409 conflict`, naming "
    "them, while it is assigned an item that is not done or cancelled or has dispatched "
    "principals.",
)
TOKEN_FLOOR: Verb[NoArgs, TokenFloor] = Verb(
    name="token_floor",
    method="GET",
    path="/v1/admin/token-floor",
    input=NoArgs,
    run=_floor,
    wire=w.to_dict,
    parse=token_floor_from_wire,
    reply=FloorReply,
    problems=(401, 403),
    tags=("admin",),
    doc="The token floor and the largest token ever granted in this database (admins).",
)
SET_TOKEN_FLOOR: Verb[FloorIn, TokenFloor] = Verb(
    name="set_token_floor",
    method="PUT",
    path="/v1/admin/token-floor",
    input=FloorIn,
    run=_raise_floor,
    wire=w.to_dict,
    parse=token_floor_from_wire,
    reply=FloorReply,
    problems=(400, 401, 403, 409, 413, 422),
    tags=("admin",),
    doc="Raise the token floor (admins): every token granted from now on, on any key, is "
    "larger than `floor` (a key whose token is already larger is unaffected). Floors only "
    "grow: a lower one is `409 conflict` and changes nothing. A live lease below the "
    "floor keeps its token until it ends. Recorded as `token_floor_set`.",
)
