"""Invariant 10: force-release is an explicit, recorded act of an authority."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import Forbidden, InvalidRequest, LeaseLost, NotFound, Principal, Service, StaleToken

ADMIN = Principal("root", "human", roles=("admin",))
SUPERVISOR = Principal("sup", "human", roles=("supervisor",))


@pytest.fixture
def org(make_store: Callable[..., tenure.Store]) -> Service:
    """jo dispatched jo/agent, which dispatched jo/agent/sub; ann is unrelated; boss is admin."""
    store = make_store()
    for principal in (
        ADMIN,
        SUPERVISOR,
        Principal("boss", "human", roles=("admin",)),
        Principal("jo", "human"),
        Principal("jo/agent", "agent", parent="jo"),
        Principal("jo/agent/sub", "agent", parent="jo/agent"),
        Principal("ann", "human"),
    ):
        store.add_principal(principal, None)
    return Service(store)


def test_an_admin_force_releases_and_the_event_names_actor_and_reason(
    org: Service, clock: tenure.FakeClock
) -> None:
    lease = org.acquire("jo", "k", ttl_ms=60_000, task="run-1")
    clock.advance(1_000)
    result = org.force_release(ADMIN, "k", reason="stuck on a dead host")
    assert (result.actor, result.reason) == ("root", "stuck on a dead host")
    assert (result.lease.state, result.lease.token, result.lease.holder) == (
        "force_released",
        lease.token,
        "jo",
    )
    assert org.get("k").state == "force_released"
    assert org.list() == []
    events = org.events(type="force_released")
    assert [(e.key, e.actor, e.reason, e.holder, e.task, e.token, e.at) for e in events] == [
        ("k", "root", "stuck on a dead host", "jo", "run-1", 1, clock.now_ms())
    ]
    assert org.acquire("ann", "k").token == 2


def test_a_supervisor_may_force_release_a_non_admin(org: Service) -> None:
    org.acquire("jo/agent", "k")
    assert org.force_release(SUPERVISOR, "k", reason="r").actor == "sup"


def test_a_supervisor_may_not_force_release_an_admin(org: Service) -> None:
    lease = org.acquire(Principal("boss", "human", roles=("admin",)), "k")
    events = org.events()
    with pytest.raises(Forbidden) as caught:
        org.force_release(SUPERVISOR, "k", reason="r")
    assert (caught.value.actor, caught.value.key) == ("sup", "k")
    assert (caught.value.code, caught.value.status) == ("forbidden", 403)
    assert org.get("k") == lease
    assert org.events() == events
    # An admin may.
    assert org.force_release(ADMIN, "k", reason="r").lease.state == "force_released"


@pytest.mark.parametrize("actor", ["jo/agent", "jo"], ids=["parent", "grandparent"])
def test_an_ancestor_of_the_holder_may_force_release(org: Service, actor: str) -> None:
    org.acquire("jo/agent/sub", "k")
    result = org.force_release(actor, "k", reason="my agent is stuck")
    assert (result.actor, result.lease.state) == (actor, "force_released")
    assert org.events(type="force_released")[0].actor == actor


@pytest.mark.parametrize(
    ("holder", "actor"),
    [
        ("jo", "ann"),  # unrelated
        ("jo", "jo/agent"),  # a child over its parent
        ("jo/agent/sub", "ann"),
        ("jo/agent", "jo/agent"),  # the holder itself (it may release, not force)
        ("jo", "stranger"),  # a principal the store does not know
    ],
)
def test_anyone_else_is_forbidden(org: Service, holder: str, actor: str) -> None:
    lease = org.acquire(holder, "k")
    with pytest.raises(Forbidden):
        org.force_release(actor, "k", reason="r")
    assert org.get("k") == lease
    assert org.events(type="force_released") == []


@pytest.mark.parametrize("reason", ["", "   ", None, 42, "bad\x00reason", "x" * 1025])
def test_a_reason_is_required(org: Service, reason: object) -> None:
    lease = org.acquire("jo", "k")
    with pytest.raises(InvalidRequest) as caught:
        org.force_release(ADMIN, "k", reason=reason)  # type: ignore[arg-type]
    assert caught.value.field == "reason"
    assert org.get("k") == lease


def test_force_releasing_nothing_live_is_not_found(org: Service, clock: tenure.FakeClock) -> None:
    with pytest.raises(NotFound):
        org.force_release(ADMIN, "never", reason="r")
    org.acquire("jo", "k", ttl_ms=1_000)
    clock.advance(1_000)
    with pytest.raises(NotFound):
        org.force_release(ADMIN, "k", reason="r")
    assert org.events(type="force_released") == []


def test_the_old_token_is_dead_from_that_moment_on(org: Service) -> None:
    lease = org.acquire("jo", "k", ttl_ms=60_000)
    org.write("jo", "k", lease.token, "before")
    org.force_release(ADMIN, "k", reason="r")
    with pytest.raises(StaleToken):
        org.write("jo", "k", lease.token, "after")
    with pytest.raises(LeaseLost) as lost:
        org.renew("jo", "k", lease.token)
    assert lost.value.reason == "force_released"
    with pytest.raises(LeaseLost):
        org.extend("jo", "k", lease.token, by_ms=1_000)
    assert org.release("jo", "k", lease.token).released is False
    assert org.read("k").value == "before"


def test_a_cycle_in_the_parent_chain_does_not_hang(
    make_store: Callable[..., tenure.Store],
) -> None:
    store = make_store()
    store.add_principal(Principal("x", "agent", parent="y"), None)
    store.add_principal(Principal("y", "agent", parent="x"), None)
    service = Service(store)
    service.acquire("x", "k")
    with pytest.raises(Forbidden):
        service.force_release("z", "k", reason="r")
    assert service.force_release("y", "k", reason="r").actor == "y"
