"""Direct mode's answers to the principal calls, shaped as the server's routes shape them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenure.core.models import Principal
from tenure.service.principals import Principals
from tenure.service.token_floors import set_floor, show_floor


def principal_handlers(
    principals: Principals,
) -> dict[str, Callable[[Principal, dict[str, Any]], Any]]:
    def listed(me: Principal, a: dict[str, Any]) -> dict[str, Any]:
        return {"principals": [p.to_dict() for p in principals.listed(me)]}

    def show(me: Principal, a: dict[str, Any]) -> dict[str, Any]:
        principal, tokens = principals.show(me, a["name"])
        return {"principal": principal.to_dict(), "tokens": [t.to_dict() for t in tokens]}

    def set_roles(me: Principal, a: dict[str, Any]) -> dict[str, Any]:
        return {"principal": principals.set_roles(me, a["name"], a["roles"]).to_dict()}

    def remove(me: Principal, a: dict[str, Any]) -> dict[str, Any]:
        principal, removal = principals.remove(me, a["name"])
        return {"principal": principal.to_dict(), "revoked": list(removal.revoked)}

    def floor(me: Principal, a: dict[str, Any]) -> dict[str, Any]:
        return show_floor(principals.store, me).to_dict()

    def raise_floor(me: Principal, a: dict[str, Any]) -> dict[str, Any]:
        return set_floor(principals.store, me, a["floor"]).to_dict()

    return {
        "token_floor": floor,
        "set_token_floor": raise_floor,
        "list_principals": listed,
        "get_principal": show,
        "set_roles": set_roles,
        "remove_principal": remove,
    }
