"""Every verb of the table, in the order of the API's reference."""

from __future__ import annotations

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
    items.FORCE_RELEASE_ITEM,
    items.REASSIGN_ITEM,
    items.DISPATCH_ITEM,
    items.MY_QUEUE,
    items.QUEUE_OF,
    items.READY_ITEMS,
    items.BRIEFING,
    hooks.CLAUDE_CODE,
]
BY_NAME: dict[str, Verb[Any, Any]] = {verb.name: verb for verb in VERBS}
