"""lease transfer: a live lease goes to another session of the same principal under a new
token, so the old session's fenced writes stop; every refusal changes nothing."""

from __future__ import annotations

import pytest

import tenure
from tenure import Conflict, InvalidRequest, LeaseHeld, LeaseLost, NotFound, NotHolder, Service
from tenure import StaleToken as Stale
from tenure.service.token_floors import set_floor

ADMIN = tenure.Principal("root", roles=("admin",))


def test_the_new_session_holds_it_under_a_new_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    old = service.acquire("web", "jobs/a", ttl_ms=60_000, task="t", meta={"m": 1}, session="r1")
    clock.advance(10)
    moved = service.transfer("web", "jobs/a", old.token, "r2")
    assert (moved.holder, moved.session, moved.state) == ("web", "r2", "live")
    assert moved.token > old.token
    assert (moved.expires_at, moved.task, moved.meta) == (old.expires_at, "t", {"m": 1})
    assert service.get("jobs/a") == moved
    (event,) = service.events(type="transferred")
    assert (event.key, event.holder, event.actor, event.token) == ("jobs/a", "web", "web", 2)
    assert event.data == {"from_session": "r1", "to_session": "r2", "from_token": old.token}


def test_the_old_sessions_fenced_write_is_refused(service: Service) -> None:
    old = service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    service.write("web", "jobs/a", old.token, "before")
    moved = service.transfer("web", "jobs/a", old.token, "r2")
    with pytest.raises(Stale):
        service.write("web", "jobs/a", old.token, "late")
    assert service.write("web", "jobs/a", moved.token, "after").version == 2
    assert service.read("jobs/a").value == "after"


def test_the_sessions_follow_the_lease(service: Service) -> None:
    old = service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    service.transfer("web", "jobs/a", old.token, "r2")
    with pytest.raises(LeaseHeld):  # r1 no longer holds it: its acquire is refused
        service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    assert not service.release("web", "jobs/a", old.token).released  # an old token ends nothing
    with pytest.raises(LeaseLost):  # nor does it take the lease back
        service.transfer("web", "jobs/a", old.token, "r1")
    assert service.release("web", "jobs/a", session="r2").released


def test_the_new_token_is_above_the_token_floor(service: Service) -> None:
    old = service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    set_floor(service.store, ADMIN, 1000)
    assert service.transfer("web", "jobs/a", old.token, "r2").token == 1001


def _unchanged(service: Service, before: tenure.Lease) -> None:
    assert service.get(before.key) == before
    assert service.events(type="transferred") == []


def test_refusals_change_nothing(service: Service, clock: tenure.FakeClock) -> None:
    lease = service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    with pytest.raises(NotHolder):
        service.transfer("bob", "jobs/a", lease.token, "r2")
    with pytest.raises(Conflict) as same:
        service.transfer("web", "jobs/a", lease.token, "r1")
    assert same.value.field == "to_session"
    with pytest.raises(Stale):
        service.transfer("web", "jobs/a", lease.token + 5, "r2")
    with pytest.raises(InvalidRequest) as bad:
        service.transfer("web", "jobs/a", lease.token, "bad\x00session")
    assert bad.value.field == "to_session"
    with pytest.raises(InvalidRequest) as zero:
        service.transfer("web", "jobs/a", 0, "r2")
    assert zero.value.field == "token"
    with pytest.raises(NotFound):
        service.transfer("web", "jobs/never", 1, "r2")
    _unchanged(service, lease)


def test_a_lost_lease_and_an_item_claim_are_refused(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("web", "jobs/a", ttl_ms=1_000, session="r1")
    clock.advance(2_000)
    with pytest.raises(LeaseLost):
        service.transfer("web", "jobs/a", lease.token, "r2")
    assert service.get("jobs/a").state == "expired"
    with pytest.raises(InvalidRequest, match="claim it from the other session") as item:
        service.transfer("web", "items/x", 1, "r2")
    assert item.value.field == "key"


def test_a_subtree_lease_is_not_transferred(service: Service) -> None:
    tree = service.acquire("web", "src/", ttl_ms=60_000, session="r1", scope="subtree")
    with pytest.raises(Conflict) as refused:
        service.transfer("web", "src/", tree.token, "r2")
    assert refused.value.field == "key"
    _unchanged(service, tree)


def test_a_subtree_lease_above_of_the_old_session_blocks_it(service: Service) -> None:
    service.acquire("web", "src/", ttl_ms=60_000, session="r1", scope="subtree")
    inner = service.acquire("web", "src/a.py", ttl_ms=60_000, session="r1")
    with pytest.raises(LeaseHeld) as held:
        service.transfer("web", "src/a.py", inner.token, "r2")
    assert held.value.held_key == "src/"
    assert service.get("src/a.py").token == inner.token
