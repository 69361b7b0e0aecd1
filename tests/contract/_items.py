"""Shared by the item contract tests (``test_items_*``): principals and a state snapshot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tenure
from tenure import Principal, Service
from tenure.core.items import item_key

ADMIN = Principal("root", "human", roles=("admin",))
BOSS = Principal("boss", "human", roles=("admin",))
SUPERVISOR = Principal("sup", "human", roles=("supervisor",))
ALICE = Principal("alice", "human")
BOB = Principal("bob", "human")
CAROL = Principal("carol", "human")
AGENT = Principal("alice/agent", "agent", parent="alice")
SUB = Principal("alice/agent/sub", "agent", parent="alice/agent")
PEOPLE = (ADMIN, BOSS, SUPERVISOR, ALICE, BOB, CAROL, AGENT, SUB)


def org(make_service: Callable[..., Service], **options: Any) -> Service:
    """A service whose store knows :data:`PEOPLE` (alice dispatched alice/agent, and so on)."""
    service = make_service(**options)
    for principal in PEOPLE:
        service.store.add_principal(principal)
    return service


def snapshot(service: Service, *item_ids: str) -> tuple[Any, ...]:
    """Everything a verb on these items could change: compare before and after a refusal."""
    store = service.store
    return (
        service.events(limit=1000),
        [service.items.get(i) for i in item_ids],  # item, lease, lease_state, transfers
        [store.get(item_key(i)) for i in item_ids],  # the key rows, their conflict counts
        service.items.list(limit=1000),
        service.list(),
        store.list_principals(),
    )


def refused_and_counted(service: Service, before: tuple[Any, ...], *item_ids: str) -> None:
    """A refusal that needed a takeover: nothing changed but the conflict it counts (and the
    expiry it may record on the way)."""
    after = snapshot(service, *item_ids)
    assert (after[1], after[3], after[4], after[5]) == (before[1], before[3], before[4], before[5])
    new = [e.type for e in after[0][len(before[0]) :]]
    assert "conflict" in new and set(new) <= {"conflict", "expired"}, new


def lapse(clock: tenure.FakeClock, ms: int = 30_000) -> None:
    """Let a lease of ``ms`` (the default ttl) lapse, and then some."""
    clock.advance(ms + 1)
