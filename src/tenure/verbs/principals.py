"""The principal verbs (who am I, add, list, show, change roles, remove, revoke a token) and the
token floor's: their inputs, their results as the clients read them, and their table entries.

Who may do what is :class:`tenure.service.principals.Principals`' (and
:mod:`tenure.service.token_floors`'); these entries only carry it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from tenure.core.models import IssuedToken, Principal
from tenure.core.signin import SigninCode
from tenure.core.token_floor import MAX_FLOOR, TokenFloor
from tenure.service.principals import MAX_TOKEN_TTL_MS
from tenure.service.token_floors import set_floor, show_floor
from tenure.store.base import TokenInfo
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
from tenure.verbs.wire import token_floor_from_wire, token_info_from_wire

#: a principal's name in a path: slashes and all, but never the path of one of its tokens
#: (:class:`tenure.server.http.convertors.PrincipalPath`)
NAME_PATH = "/v1/principals/{name:principal}"
Roles = Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2)]


@dataclass(frozen=True)
class PrincipalInfo:
    """A principal and its tokens (ids and times, oldest first; never a secret)."""

    principal: Principal
    tokens: tuple[TokenInfo, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal.to_dict(), "tokens": [t.to_dict() for t in self.tokens]}

    @classmethod
    def from_wire(cls, data: Any) -> PrincipalInfo:
        tokens = tuple(token_info_from_wire(t) for t in data["tokens"])
        return cls(Principal.from_wire(data["principal"]), tokens)


@dataclass(frozen=True)
class RemovedPrincipal:
    """A principal that was removed, and the ids of the tokens that revoked."""

    principal: Principal
    revoked: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal.to_dict(), "revoked": list(self.revoked)}

    @classmethod
    def from_wire(cls, data: Any) -> RemovedPrincipal:
        return cls(Principal.from_wire(data["principal"]), tuple(data["revoked"]))


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
    roles: Roles


class SetRolesIn(RolesIn):
    name: Name


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


def _set_roles(services: Services, me: Principal, a: SetRolesIn) -> Principal:
    return services.principals.set_roles(me, a.name, list(a.roles))


def _remove(services: Services, me: Principal, a: NameIn) -> RemovedPrincipal:
    principal, removal = services.principals.remove(me, a.name)
    return RemovedPrincipal(principal, removal.revoked)


def _floor(services: Services, me: Principal, a: NoArgs) -> TokenFloor:
    return show_floor(services.leases.store, me)


def _raise_floor(services: Services, me: Principal, a: FloorIn) -> TokenFloor:
    return set_floor(services.leases.store, me, a.floor)


def _signin_code(services: Services, me: Principal, a: NoArgs) -> SigninCode:
    return services.principals.signin_code(me)


SIGNIN_CODE: Verb[NoArgs, SigninCode] = Verb(
    "signin_code", "POST", "/v1/signin/codes", NoArgs, _signin_code, w.to_dict,
    SigninCode.from_wire, SigninCodeReply, problems=(400, 401, 413, 422),
    tags=("principals",), status=201, repeatable=never,
    doc="A one-time code that signs the web dashboard in as you: open `<server>/#signin=<code>` "
    "within a minute. It works once; only its hash is stored. The dashboard trades it "
    "(`POST /v1/signin`) for a token of yours that expires after 12 hours.",
)  # fmt: skip
WHOAMI: Verb[NoArgs, Principal] = Verb(
    "whoami", "GET", "/v1/me", NoArgs, _whoami, _principal, _of_principal, MeReply,
    problems=(401,), tags=("principals",),
)  # fmt: skip
ADD_PRINCIPAL: Verb[PrincipalIn, IssuedToken] = Verb(
    "add_principal", "POST", "/v1/principals", PrincipalIn, _add, w.to_dict,
    IssuedToken.from_wire, PrincipalReply, problems=(400, 401, 403, 404, 409, 413, 422),
    tags=("principals",), status=201, repeatable=never,
)  # fmt: skip
REVOKE_TOKEN: Verb[RevokeTokenIn, None] = Verb(
    "revoke_token", "DELETE", "/v1/principals/{name:path}/tokens/{token_id}", RevokeTokenIn,
    _revoke, _nothing, _nothing, PrincipalReply, problems=(401, 403, 404, 422),
    tags=("principals",), status=204, repeatable=never,
    doc="Revoke one token of `name`: admins revoke anyone's, a principal its own, and an "
    "ancestor (the principal that dispatched `name`, and its own ancestors) those of the "
    "agents below it; anyone else gets `403 forbidden`. The `token_revoked` event names "
    "who revoked it.",
)  # fmt: skip
LIST_PRINCIPALS: Verb[NoArgs, list[Principal]] = Verb(
    "list_principals", "GET", "/v1/principals", NoArgs, _listed, _principals, _of_principals,
    PrincipalsReply, problems=(401,), tags=("principals",),
    doc="Every principal for an admin; for anyone else itself and the agents it dispatched "
    "(and theirs), by name.",
)  # fmt: skip
SHOW_PRINCIPAL: Verb[NameIn, PrincipalInfo] = Verb(
    "show_principal", "GET", NAME_PATH, NameIn, _show, w.to_dict, PrincipalInfo.from_wire,
    PrincipalShowReply, problems=(401, 403, 404, 422), tags=("principals",),
    doc="`name`, with its tokens' ids, creation, expiry and revocation (never a secret): for "
    "admins, the principal itself and its ancestors.",
)  # fmt: skip
SET_ROLES: Verb[SetRolesIn, Principal] = Verb(
    "set_roles", "PATCH", NAME_PATH, SetRolesIn, _set_roles, _principal, _of_principal,
    PrincipalRolesReply, problems=(400, 401, 403, 404, 413, 422), tags=("principals",),
    body=RolesIn,
    doc="Replace the roles of `name` (admins only); recorded as `principal_roles_set`.",
)  # fmt: skip
REMOVE_PRINCIPAL: Verb[NameIn, RemovedPrincipal] = Verb(
    "remove_principal", "DELETE", NAME_PATH, NameIn, _remove, w.to_dict,
    RemovedPrincipal.from_wire, PrincipalRemovedReply, problems=(401, 403, 404, 409, 422),
    tags=("principals",), repeatable=never,
    doc="Remove `name` (admins, and its ancestors): its live leases are force-released "
    "(`force_released`, reason `principal_removed`), its tokens revoked (`token_revoked`) and "
    "`principal_removed` is recorded, in one transaction. Refused with `409 conflict`, naming "
    "them, while it is assigned an item that is not done or cancelled or has dispatched "
    "principals.",
)  # fmt: skip
TOKEN_FLOOR: Verb[NoArgs, TokenFloor] = Verb(
    "token_floor", "GET", "/v1/admin/token-floor", NoArgs, _floor, w.to_dict,
    token_floor_from_wire, FloorReply, problems=(401, 403), tags=("admin",),
    doc="The token floor and the largest token ever granted in this database (admins).",
)  # fmt: skip
SET_TOKEN_FLOOR: Verb[FloorIn, TokenFloor] = Verb(
    "set_token_floor", "PUT", "/v1/admin/token-floor", FloorIn, _raise_floor, w.to_dict,
    token_floor_from_wire, FloorReply, problems=(400, 401, 403, 409, 413, 422), tags=("admin",),
    doc="Raise the token floor (admins): every token granted from now on, on any key, is "
    "larger than `floor` (a key whose token is already larger is unaffected). Floors only "
    "grow: a lower one is `409 conflict` and changes nothing. A live lease below the "
    "floor keeps its token until it ends. Recorded as `token_floor_set`.",
)  # fmt: skip
