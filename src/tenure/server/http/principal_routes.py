"""The routes that list, show, change and remove principals (creating one and revoking a token
are in :mod:`tenure.server.http.app`). Who may: see
:class:`tenure.service.principals.Principals`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Path
from starlette.convertors import PathConvertor, register_url_convertor

from tenure.server.http import openapi
from tenure.server.http import ops_schemas as o
from tenure.server.http.deps import Caller, St
from tenure.verbs import fields as f

P = openapi.problem_responses
NameParam = Annotated[str, Path(json_schema_extra={"pattern": f.NAME_PATTERN})]


class PrincipalPath(PathConvertor):
    """A principal's name in a path, slashes included, but never the path of one of its tokens
    (``jo/tokens/0123456789ab``): that one is the token route's, and its other methods are
    ``405``, not a principal named ``jo/tokens/0123456789ab``."""

    regex = r"(?!.*/tokens/[0-9a-f]{12}$).+"


register_url_convertor("principal", PrincipalPath())


def add_principal_routes(app: FastAPI) -> None:
    @app.get(
        "/v1/principals",
        response_model=o.PrincipalsReply,
        tags=["principals"],
        responses=P(401),
    )
    def list_principals(me: Caller, st: St) -> dict[str, Any]:
        """Every principal for an admin; for anyone else itself and the agents it dispatched
        (and theirs), by name."""
        return {"principals": [p.to_dict() for p in st.principals.listed(me)]}

    @app.get(
        "/v1/principals/{name:principal}",
        response_model=o.PrincipalShowReply,
        tags=["principals"],
        responses=P(401, 403, 404, 422),
    )
    def show_principal(name: NameParam, me: Caller, st: St) -> dict[str, Any]:
        """`name`, with its tokens' ids, creation, expiry and revocation (never a secret): for
        admins, the principal itself and its ancestors."""
        principal, tokens = st.principals.show(me, name)
        return {"principal": principal.to_dict(), "tokens": [t.to_dict() for t in tokens]}

    @app.patch(
        "/v1/principals/{name:principal}",
        response_model=o.PrincipalRolesReply,
        tags=["principals"],
        responses=P(400, 401, 403, 404, 413, 422),
    )
    def set_roles(name: NameParam, body: o.RolesIn, me: Caller, st: St) -> dict[str, Any]:
        """Replace the roles of `name` (admins only); recorded as `principal_roles_set`."""
        return {"principal": st.principals.set_roles(me, name, list(body.roles)).to_dict()}

    @app.delete(
        "/v1/principals/{name:principal}",
        response_model=o.PrincipalRemovedReply,
        tags=["principals"],
        responses=P(401, 403, 404, 409, 422),
    )
    def remove_principal(name: NameParam, me: Caller, st: St) -> dict[str, Any]:
        """Remove `name` (admins, and its ancestors): its tokens are revoked (`token_revoked`)
        and `principal_removed` is recorded. Refused with `409 conflict`, naming them, while it
        holds a live lease or is assigned an item that is not done or cancelled."""
        principal, removal = st.principals.remove(me, name)
        return {"principal": principal.to_dict(), "revoked": list(removal.revoked)}
