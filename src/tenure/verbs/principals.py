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
from tenure.verbs.admin import ADMIN
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
from tenure.verbs.table import Family, Reply, Services, never
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


def _principals(found: list[Principal]) -> dict[str, Any]:
    return {"principals": [p.to_dict() for p in found]}


def _of_principals(data: Any) -> list[Principal]:
    return [Principal.from_wire(p) for p in data["principals"]]


def _nothing(_: None) -> None:
    return None


PRINCIPALS = Family(tags=("principals",), problems=(401, 403, 404, 422))


def _signin_code(services: Services, me: Principal, a: NoArgs) -> SigninCode:
    """A one-time code that signs the web dashboard in as you: open `<server>/#signin=<code>`
    within a minute. It works once; only its hash is stored. The dashboard trades it (`POST
    /v1/signin`) for a token of yours that expires after 12 hours."""
    return services.principals.signin_code(me)


SIGNIN_CODE = PRINCIPALS.verb(
    "signin_code", "POST /v1/signin/codes", NoArgs, _signin_code,
    Reply.of(SigninCode.from_wire, SigninCodeReply), problems=(400, 401, 413, 422),
    status=201, repeatable=never,
)  # fmt: skip


def _whoami(services: Services, me: Principal, a: NoArgs) -> Principal:
    return me


ME = Reply(_principal, _of_principal, MeReply)
WHOAMI = PRINCIPALS.verb("whoami", "GET /v1/me", NoArgs, _whoami, ME, problems=(401,))


def _add(services: Services, me: Principal, a: PrincipalIn) -> IssuedToken:
    return services.principals.create(me, a.name, a.kind, list(a.roles), a.parent, a.ttl_ms)


ADD_PRINCIPAL = PRINCIPALS.verb(
    "add_principal", "POST /v1/principals", PrincipalIn, _add,
    Reply.of(IssuedToken.from_wire, PrincipalReply),
    problems=(400, 401, 403, 404, 409, 413, 422), status=201, repeatable=never,
)  # fmt: skip


def _revoke(services: Services, me: Principal, a: RevokeTokenIn) -> None:
    """Revoke one token of `name`: admins revoke anyone's, a principal its own, and an ancestor
    (the principal that dispatched `name`, and its own ancestors) those of the agents below it;
    anyone else gets `403 forbidden`. The `token_revoked` event names who revoked it."""
    services.principals.revoke(me, a.name, a.token_id)


REVOKE_TOKEN = PRINCIPALS.verb(
    "revoke_token", "DELETE /v1/principals/{name:path}/tokens/{token_id}", RevokeTokenIn,
    _revoke, Reply(_nothing, _nothing, PrincipalReply), status=204, repeatable=never,
)  # fmt: skip


def _listed(services: Services, me: Principal, a: NoArgs) -> list[Principal]:
    """Every principal for an admin; for anyone else itself and the agents it dispatched (and
    theirs), by name."""
    return services.principals.listed(me)


LIST_PRINCIPALS = PRINCIPALS.verb(
    "list_principals", "GET /v1/principals", NoArgs, _listed,
    Reply(_principals, _of_principals, PrincipalsReply), problems=(401,),
)  # fmt: skip


def _show(services: Services, me: Principal, a: NameIn) -> PrincipalInfo:
    """`name`, with its tokens' ids, creation, expiry and revocation (never a secret): for
    admins, the principal itself and its ancestors."""
    principal, tokens = services.principals.show(me, a.name)
    return PrincipalInfo(principal, tuple(tokens))


SHOW_PRINCIPAL = PRINCIPALS.verb(
    "show_principal", f"GET {NAME_PATH}", NameIn, _show,
    Reply.of(PrincipalInfo.from_wire, PrincipalShowReply),
)  # fmt: skip


def _set_roles(services: Services, me: Principal, a: RolesIn) -> Principal:
    """Replace the roles of `name` (admins only); recorded as `principal_roles_set`."""
    return services.principals.set_roles(me, a.name, list(a.roles))


SET_ROLES = PRINCIPALS.verb(
    "set_roles", f"PATCH {NAME_PATH}", RolesIn, _set_roles,
    Reply(_principal, _of_principal, PrincipalRolesReply), problems=(400, 401, 403, 404, 413, 422),
)  # fmt: skip


def _remove(services: Services, me: Principal, a: NameIn) -> RemovedPrincipal:
    """Remove `name` (admins, and its ancestors): its live leases are force-released
    (`force_released`, reason `principal_removed`), its tokens revoked (`token_revoked`) and
    `principal_removed` is recorded, in one transaction. Refused with `409 conflict`, naming
    them, while it is assigned an item that is not done or cancelled or has dispatched
    principals."""
    principal, removal = services.principals.remove(me, a.name)
    return RemovedPrincipal(principal, removal.revoked)


REMOVE_PRINCIPAL = PRINCIPALS.verb(
    "remove_principal", f"DELETE {NAME_PATH}", NameIn, _remove,
    Reply.of(RemovedPrincipal.from_wire, PrincipalRemovedReply),
    problems=(401, 403, 404, 409, 422), repeatable=never,
)  # fmt: skip


FLOOR = Reply.of(token_floor_from_wire, FloorReply)


def _floor(services: Services, me: Principal, a: NoArgs) -> TokenFloor:
    """The token floor and the largest token ever granted in this database (admins)."""
    from tenure.service.token_floors import show_floor  # the client reads the table without it

    return show_floor(services.leases.store, me)


TOKEN_FLOOR = ADMIN.verb(
    "token_floor", "GET /v1/admin/token-floor", NoArgs, _floor, FLOOR, problems=(401, 403)
)


def _raise_floor(services: Services, me: Principal, a: FloorIn) -> TokenFloor:
    """Raise the token floor (admins): every token granted from now on, on any key, is larger
    than `floor` (a key whose token is already larger is unaffected). Floors only grow: a lower
    one is `409 conflict` and changes nothing. A live lease below the floor keeps its token
    until it ends. Recorded as `token_floor_set`."""
    from tenure.service.token_floors import set_floor  # the client reads the table without it

    return set_floor(services.leases.store, me, a.floor)


SET_TOKEN_FLOOR = ADMIN.verb(
    "set_token_floor", "PUT /v1/admin/token-floor", FloorIn, _raise_floor, FLOOR,
    problems=(400, 401, 403, 409, 413, 422),
)  # fmt: skip
