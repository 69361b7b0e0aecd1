"""What the clients send to list, show, change and remove principals, and what the replies
mean (``add_principal`` and ``revoke_token`` are in :mod:`tenure.client._shared`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenure.client._shared import Call, Safety, _listed, principal_from, segment
from tenure.core.models import Principal
from tenure.core.token_floor import TokenFloor
from tenure.store.base import TokenInfo


@dataclass(frozen=True)
class PrincipalInfo:
    """A principal and its tokens (ids and times, oldest first; never a secret)."""

    principal: Principal
    tokens: tuple[TokenInfo, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal.to_dict(), "tokens": [t.to_dict() for t in self.tokens]}


@dataclass(frozen=True)
class RemovedPrincipal:
    """A principal that was removed, and the ids of the tokens that revoked."""

    principal: Principal
    revoked: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal.to_dict(), "revoked": list(self.revoked)}


def list_principals() -> Call[list[Principal]]:
    return Call("list_principals", "GET", "/v1/principals", _principals)


def get_principal(name: str) -> Call[PrincipalInfo]:
    path = f"/v1/principals/{segment(name, 'name')}"
    return Call("get_principal", "GET", path, _info, path_args={"name": name})


def set_roles(name: str, roles: tuple[str, ...] | list[str]) -> Call[Principal]:
    path = f"/v1/principals/{segment(name, 'name')}"
    body = {"roles": _listed(roles)}
    return Call("set_roles", "PATCH", path, _principal, body, path_args={"name": name})


def remove_principal(name: str) -> Call[RemovedPrincipal]:
    path = f"/v1/principals/{segment(name, 'name')}"
    args = {"name": name}
    return Call("remove_principal", "DELETE", path, _removed, path_args=args, safety=Safety.UNSAFE)


def _principals(data: Any) -> list[Principal]:
    return [principal_from(p) for p in data["principals"]]


def _principal(data: Any) -> Principal:
    return principal_from(data["principal"])


def _info(data: Any) -> PrincipalInfo:
    tokens = tuple(
        TokenInfo(t["token_id"], t["created_at"], t.get("expires_at"), t.get("revoked_at"))
        for t in data["tokens"]
    )
    return PrincipalInfo(principal_from(data["principal"]), tokens)


def _removed(data: Any) -> RemovedPrincipal:
    return RemovedPrincipal(principal_from(data["principal"]), tuple(data["revoked"]))


def token_floor() -> Call[TokenFloor]:
    return Call("token_floor", "GET", "/v1/admin/token-floor", _floor)


def set_token_floor(floor: int) -> Call[TokenFloor]:
    return Call("set_token_floor", "PUT", "/v1/admin/token-floor", _floor, {"floor": floor})


def _floor(doc: Any) -> TokenFloor:
    return TokenFloor(int(doc["floor"]), int(doc["max_token"]))
