"""Semaphores: a key acquired with ``slots: N`` is held by up to N holders at once, each with
its own lease on a slot key (``KEY#slot/I``) and its own token, drawn from the semaphore's one
counter (distinct, growing); the N+1th is refused naming the holders; holders agree on N."""

from __future__ import annotations

import threading

import pytest

import tenure
from tenure import InvalidRequest, LeaseHeld, Service
from tenure.errors import LeaseLost, SlotsMismatch, StaleToken


def test_n_holders_get_n_distinct_growing_tokens(service: Service) -> None:
    got = [service.acquire(who, "gpu", slots=3, ttl_ms=60_000) for who in ("a", "b", "c")]
    assert [g.key for g in got] == ["gpu#slot/0", "gpu#slot/1", "gpu#slot/2"]
    tokens = [g.token for g in got]
    assert tokens == sorted(tokens) and len(set(tokens)) == 3
    assert {g.holder for g in service.list(prefix="gpu#slot/")} == {"a", "b", "c"}


def test_the_n_plus_first_is_refused_naming_the_holders_and_the_first_to_end(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("a", "gpu", slots=2, ttl_ms=60_000, task="train")
    clock.advance(1_000)
    service.acquire("b", "gpu", slots=2, ttl_ms=30_000)
    with pytest.raises(LeaseHeld) as caught:
        service.acquire("c", "gpu", slots=2)
    err = caught.value
    assert err.key == "gpu" and err.slots == 2
    assert sorted(err.holders or []) == ["a", "b"]
    assert (err.holder, err.held_key) == ("b", "gpu#slot/1")  # b's ends first
    assert err.to_problem()["holders"] == ["a", "b"]


def test_the_same_session_renews_its_own_slot(service: Service) -> None:
    first = service.acquire("a", "gpu", slots=2, session="w1")
    again = service.acquire("a", "gpu", slots=2, session="w1")
    assert (again.key, again.token) == (first.key, first.token)
    other = service.acquire("a", "gpu", slots=2, session="w2")  # another session: a slot more
    assert other.key == "gpu#slot/1" and other.token > first.token


def test_a_release_frees_a_slot_and_the_next_token_is_larger(service: Service) -> None:
    a = service.acquire("a", "gpu", slots=2)
    b = service.acquire("b", "gpu", slots=2)
    assert service.release("a", a.key, a.token).released
    c = service.acquire("c", "gpu", slots=2)
    assert c.key == a.key and c.token > max(a.token, b.token)


def test_a_lapsed_slot_frees(service: Service, clock: tenure.FakeClock) -> None:
    a = service.acquire("a", "gpu", slots=1, ttl_ms=2_000)
    with pytest.raises(LeaseHeld):
        service.acquire("b", "gpu", slots=1)
    clock.advance(2_000)
    b = service.acquire("b", "gpu", slots=1)
    assert b.key == a.key and b.token > a.token
    with pytest.raises(LeaseLost):
        service.renew("a", a.key, a.token)


def test_holders_must_agree_on_the_number_of_slots(service: Service) -> None:
    a = service.acquire("a", "gpu", slots=3)
    with pytest.raises(SlotsMismatch) as caught:
        service.acquire("b", "gpu", slots=2)
    assert caught.value.slots == 3 and caught.value.status == 409
    assert caught.value.field == "slots"
    assert [x.holder for x in service.list(prefix="gpu#slot/")] == ["a"]
    service.release("a", a.key, a.token)  # nobody holds it: another N is fine
    assert service.acquire("b", "gpu", slots=2).key == "gpu#slot/0"


def test_a_fenced_write_with_a_released_slots_token_is_refused(service: Service) -> None:
    a = service.acquire("a", "gpu", slots=2)
    service.write("a", a.key, a.token, {"step": 1})
    service.release("a", a.key, a.token)
    b = service.acquire("b", "gpu", slots=2)
    assert b.key == a.key
    with pytest.raises(StaleToken):
        service.write("a", a.key, a.token, {"step": 2})
    assert service.write("b", b.key, b.token, {"step": 3}).token == b.token


def test_slot_keys_and_plain_leases_do_not_mix(service: Service) -> None:
    with pytest.raises(InvalidRequest) as caught:
        service.acquire("a", "gpu#slot/0")
    assert caught.value.field == "key"
    service.acquire("a", "plain")
    with pytest.raises(LeaseHeld):
        service.acquire("b", "plain", slots=2)


@pytest.mark.parametrize("slots", [0, -1, 1001, True])
def test_bad_slots_are_refused(service: Service, slots: object) -> None:
    with pytest.raises(InvalidRequest) as caught:
        service.acquire("a", "gpu", slots=slots)  # type: ignore[arg-type]
    assert caught.value.field == "slots"
    assert service.list() == []


def test_concurrent_acquisitions_grant_exactly_n_with_distinct_tokens(service: Service) -> None:
    """Eight threads at once on three slots: three grants, five refusals, three tokens."""
    start = threading.Barrier(8)
    granted: list[tenure.Lease] = []
    refused: list[LeaseHeld] = []

    def contend(who: str) -> None:
        start.wait(10)
        try:
            granted.append(service.acquire(who, "gpu", slots=3, ttl_ms=60_000))
        except LeaseHeld as err:
            refused.append(err)

    threads = [threading.Thread(target=contend, args=(f"w{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(granted) == 3 and len(refused) == 5
    assert len({g.token for g in granted}) == 3
    assert sorted(g.key for g in granted) == [f"gpu#slot/{i}" for i in range(3)]
    assert len(service.list(prefix="gpu#slot/")) == 3


def test_a_key_that_leaves_no_room_for_its_slot_keys_is_refused(
    service: Service,
) -> None:
    # A slot key is the key and "#slot/I": it must fit the bound on keys (512 bytes by default),
    # or every verb that reads the slot's lease back (release-all, lists) would refuse it.
    long = "k" * 506  # "#slot/9" makes 513
    with pytest.raises(InvalidRequest) as refused:
        service.acquire("a", long, slots=10)
    assert refused.value.field == "key" and refused.value.maximum == 505, refused.value
    with pytest.raises(InvalidRequest):
        service.acquire("b", long, slots=1)
    fits = service.acquire("a", "k" * 505, slots=10)  # the refusals drew no token
    assert (fits.key, fits.token) == ("k" * 505 + "#slot/0", 1)
