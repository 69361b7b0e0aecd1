"""What the clients send to list, show, change and remove principals and to read and raise the
token floor, and what the replies mean (``add_principal`` and ``revoke_token`` are in
:mod:`tenure.client._shared`): each a verb of :mod:`tenure.verbs.principals`."""

from __future__ import annotations

from tenure.client._shared import Call, _listed, verb_call
from tenure.core.compaction import CompactionResult
from tenure.core.models import Principal
from tenure.core.token_floor import TokenFloor
from tenure.verbs import admin as av
from tenure.verbs import principals as pv
from tenure.verbs.principals import PrincipalInfo, RemovedPrincipal

__all__ = ["PrincipalInfo", "RemovedPrincipal"]


def list_principals() -> Call[list[Principal]]:
    return verb_call(pv.LIST_PRINCIPALS)


def get_principal(name: str) -> Call[PrincipalInfo]:
    return verb_call(pv.SHOW_PRINCIPAL, name=name)


def set_roles(name: str, roles: tuple[str, ...] | list[str]) -> Call[Principal]:
    return verb_call(pv.SET_ROLES, name=name, roles=_listed(roles))


def remove_principal(name: str) -> Call[RemovedPrincipal]:
    return verb_call(pv.REMOVE_PRINCIPAL, name=name)


def token_floor() -> Call[TokenFloor]:
    return verb_call(pv.TOKEN_FLOOR)


def set_token_floor(floor: int) -> Call[TokenFloor]:
    return verb_call(pv.SET_TOKEN_FLOOR, floor=floor)


def compact(batch: int = 1000, max_batches: int = 100) -> Call[CompactionResult]:
    return verb_call(av.COMPACT, batch=batch, max_batches=max_batches)
