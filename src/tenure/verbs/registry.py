"""Every verb of the table, in the order of the API's reference.

A verb defined in one of the table's modules but missing from :data:`VERBS` (no route, no
OpenAPI entry, no direct mode) stops the import with the names of what is missing, as does a
name used twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from tenure.verbs import admin, hooks, items, leases, ops, principals
from tenure.verbs.table import Verb

VERBS: list[Verb[Any, Any]] = [
    leases.ACQUIRE,
    leases.RENEW,
    leases.RENEW_ALL,
    leases.EXTEND,
    leases.RELEASE,
    leases.RELEASE_ALL,
    leases.TRANSFER,
    leases.FORCE_RELEASE,
    leases.GET_LEASE,
    leases.LIST_LEASES,
    leases.FENCED_WRITE,
    leases.FENCED_READ,
    principals.WHOAMI,
    principals.SIGNIN_CODE,
    principals.ADD_PRINCIPAL,
    principals.REVOKE_TOKEN,
    principals.LIST_PRINCIPALS,
    principals.SHOW_PRINCIPAL,
    principals.SET_ROLES,
    principals.REMOVE_PRINCIPAL,
    principals.TOKEN_FLOOR,
    principals.SET_TOKEN_FLOOR,
    admin.COMPACT,
    ops.EVENTS,
    ops.STATS,
    ops.TIMELINE,
    items.CREATE_ITEM,
    items.LIST_ITEMS,
    items.GET_ITEM,
    items.UPDATE_ITEM,
    items.CLAIM_ITEM,
    items.RENEW_ITEM,
    items.EXTEND_ITEM,
    items.RELEASE_ITEM,
    items.PROGRESS_ITEM,
    items.COMPLETE_ITEM,
    items.CANCEL_ITEM,
    items.REOPEN_ITEM,
    items.FORCE_RELEASE_ITEM,
    items.REASSIGN_ITEM,
    items.DISPATCH_ITEM,
    items.MY_QUEUE,
    items.QUEUE_OF,
    items.READY_ITEMS,
    items.BRIEFING,
    hooks.CLAUDE_CODE,
]
MODULES = (leases, principals, admin, ops, items, hooks)


def unlisted(modules: Iterable[ModuleType], verbs: Iterable[Verb[Any, Any]]) -> list[str]:
    """The verbs defined in ``modules`` (as module attributes) that ``verbs`` leaves out, and
    the names ``verbs`` holds twice."""
    listed = {id(verb) for verb in verbs}
    missing = {
        f"{module.__name__}.{attr}"
        for module in modules
        for attr, value in vars(module).items()
        if isinstance(value, Verb) and id(value) not in listed
    }
    names = [verb.name for verb in verbs]
    twice = {f"{name} (twice)" for name in names if names.count(name) > 1}
    return sorted(missing | twice)


if wrong := unlisted(MODULES, VERBS):  # pragma: no cover - a table being written
    raise RuntimeError(f"the verb table's list (tenure.verbs.registry.VERBS) misses: {wrong}")
BY_NAME: dict[str, Verb[Any, Any]] = {verb.name: verb for verb in VERBS}
