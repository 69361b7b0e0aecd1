"""The token floor: after setting floor N, every new token on any key is larger than N; tokens
still only grow; floors only grow; a live lease below the floor keeps its token until it ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import InvalidRequest, Service
from tenure.core.models import EventQuery
from tenure.core.token_floor import MAX_FLOOR
from tenure.service.token_floors import set_floor, show_floor

from ._items import ALICE

ADMIN = tenure.Principal("root", roles=("admin",))


def test_a_new_key_after_the_floor_gets_a_larger_token(service: Service) -> None:
    set_floor(service.store, ADMIN, 1000)
    assert service.acquire("alice", "fresh").token == 1001
    assert service.acquire("bob", "other").token == 1001


def test_an_ended_key_below_the_floor_gets_a_larger_token(service: Service) -> None:
    assert service.acquire("alice", "k").token == 1
    service.release("alice", "k", 1)
    set_floor(service.store, ADMIN, 500)
    assert service.acquire("bob", "k").token == 501


def test_an_expired_lease_below_the_floor_ends_and_the_next_token_is_larger(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    set_floor(service.store, ADMIN, 50)
    clock.advance(2_000)  # lapses; nobody reaps
    assert service.acquire("bob", "k").token == 51


def test_a_key_already_above_the_floor_is_unaffected(service: Service) -> None:
    for _ in range(5):
        lease = service.acquire("alice", "k")
        service.release("alice", "k", lease.token)
    set_floor(service.store, ADMIN, 3)
    assert service.acquire("alice", "k").token == 6


def test_a_live_lease_below_the_floor_keeps_its_token_until_it_ends(
    service: Service, clock: tenure.FakeClock
) -> None:
    assert service.acquire("alice", "k", ttl_ms=5_000).token == 1
    set_floor(service.store, ADMIN, 100)
    clock.advance(1_000)
    assert service.renew("alice", "k", 1).token == 1
    assert service.acquire("alice", "k").token == 1  # its own live lease: renewed
    with pytest.raises(tenure.LeaseHeld):
        service.acquire("bob", "k")
    assert service.release("alice", "k", 1).released
    assert service.acquire("bob", "k").token == 101


def test_a_lower_floor_is_refused_and_changes_nothing(service: Service) -> None:
    set_floor(service.store, ADMIN, 100)
    before = service.events()
    with pytest.raises(InvalidRequest) as refused:
        set_floor(service.store, ADMIN, 99)
    assert isinstance(refused.value, tenure.Conflict) and refused.value.field == "floor"
    assert "floors only grow" in str(refused.value)
    assert show_floor(service.store, ADMIN).floor == 100
    assert service.events() == before
    assert service.acquire("alice", "k").token == 101


@pytest.mark.parametrize("bad", [-1, 2**63, "10", 1.5, True])
def test_a_floor_that_is_not_a_whole_number_in_range_is_refused(
    service: Service, bad: object
) -> None:
    with pytest.raises(InvalidRequest):
        set_floor(service.store, ADMIN, bad)
    assert show_floor(service.store, ADMIN).floor == 0


def test_only_admins_set_or_read_the_floor(service: Service) -> None:
    alice = tenure.Principal("alice")
    with pytest.raises(tenure.Forbidden):
        set_floor(service.store, alice, 10)
    with pytest.raises(tenure.Forbidden):
        show_floor(service.store, alice)
    assert show_floor(service.store, None).floor == 0


def test_setting_the_floor_is_an_event(service: Service) -> None:
    set_floor(service.store, ADMIN, 10)
    set_floor(service.store, None, 20)
    events = service.store.events(EventQuery(type="token_floor_set"))
    assert [(e.actor, e.data) for e in events] == [
        ("root", {"from": 0, "to": 10}),
        (None, {"from": 10, "to": 20}),
    ]


def test_show_reports_the_floor_and_the_largest_token(service: Service) -> None:
    service.acquire("alice", "a")
    service.release("alice", "a", 1)
    service.acquire("alice", "a")
    assert show_floor(service.store, ADMIN).to_dict() == {"floor": 0, "max_token": 2}
    set_floor(service.store, ADMIN, 7)
    assert show_floor(service.store, ADMIN).to_dict() == {"floor": 7, "max_token": 2}


def test_the_floor_survives_reopening_the_store(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    first = make_store()
    set_floor(first, ADMIN, 40)
    first.close()
    again = Service(make_store())
    assert show_floor(again.store, ADMIN).floor == 40
    assert again.acquire("alice", "k").token == 41


def test_a_group_acquisition_gets_tokens_above_the_floor(service: Service) -> None:
    set_floor(service.store, ADMIN, 9)
    with service.group():
        a = service.acquire("alice", "g1")
        b = service.acquire("alice", "g2")
    assert (a.token, b.token) == (10, 10)


def test_an_item_claim_after_the_floor_gets_a_larger_epoch(svc: Service) -> None:
    set_floor(svc.store, ADMIN, 30)
    claim = svc.items.claim(ALICE, "job")
    assert (claim.lease.token, claim.item.epoch) == (31, 31)


def test_a_semaphore_slot_after_the_highest_floor_gets_a_larger_token(service: Service) -> None:
    # The floor can be as high as 2**62: a slot's token is drawn above it (a 64-bit number on
    # every backend, never a 32-bit one: PostgreSQL answered 500 here once).
    set_floor(service.store, ADMIN, MAX_FLOOR)
    assert service.acquire("alice", "gpu", slots=2).token == MAX_FLOOR + 1
    assert service.acquire("bob", "gpu", slots=2).token == MAX_FLOOR + 2
