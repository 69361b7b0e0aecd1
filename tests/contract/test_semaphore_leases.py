"""A slot lease says it is one: ``semaphore`` (the semaphore's key), ``slot`` (its number, as in
its key) and ``slots`` (the semaphore's N) on every reply that carries it, null on a plain
lease; and a slot lease is transferred as the same slot under the semaphore's next token."""

from __future__ import annotations

import json

import pytest

import tenure
from tenure import Service
from tenure.errors import StaleToken


def _slot(lease: tenure.Lease) -> tuple[str | None, int | None, int | None]:
    return lease.semaphore, lease.slot, lease.slots


def test_a_slot_lease_names_its_semaphore_slot_and_slots(service: Service) -> None:
    a = service.acquire("a", "gpu", slots=3, ttl_ms=60_000)
    b = service.acquire("b", "gpu", slots=3, ttl_ms=60_000)
    assert (_slot(a), _slot(b)) == (("gpu", 0, 3), ("gpu", 1, 3))
    assert _slot(service.renew("b", b.key, b.token)) == ("gpu", 1, 3)
    assert _slot(service.extend("b", b.key, b.token, by_ms=90_000).lease) == ("gpu", 1, 3)
    assert _slot(service.get(b.key)) == ("gpu", 1, 3)
    assert [_slot(x) for x in service.list(prefix="gpu")] == [("gpu", 0, 3), ("gpu", 1, 3)]
    released = service.release("a", a.key, a.token).lease
    assert released is not None and _slot(released) == ("gpu", 0, 3)
    wire = b.to_dict()
    assert (wire["semaphore"], wire["slot"], wire["slots"]) == ("gpu", 1, 3)
    assert _slot(tenure.Lease.from_wire(wire)) == ("gpu", 1, 3)


def test_a_plain_lease_has_no_slot(service: Service) -> None:
    plain = service.acquire("a", "jobs/x", ttl_ms=60_000)
    assert _slot(plain) == _slot(service.get("jobs/x")) == (None, None, None)
    assert {"semaphore": None, "slot": None, "slots": None}.items() <= plain.to_dict().items()


def test_the_heartbeats_reply_names_the_slots(service: Service) -> None:
    service.acquire("a", "gpu", slots=2, ttl_ms=60_000)
    service.acquire("a", "jobs/x", ttl_ms=60_000)
    reply = json.loads(service.renew_all_json("a"))
    got = [(x["key"], x["semaphore"], x["slot"], x["slots"]) for x in reply["renewed"]]
    assert got == [("gpu#slot/0", "gpu", 0, 2), ("jobs/x", None, None, None)]
    again = service.renew_all("a").renewed  # the same, as leases
    assert [_slot(x) for x in again] == [("gpu", 0, 2), (None, None, None)]
    assert [_slot(x) for x in service.renew_all("a", keys=["gpu#slot/0"]).renewed] == [
        ("gpu", 0, 2)
    ]


def test_a_transferred_slot_stays_the_slot_under_the_semaphores_next_token(
    service: Service,
) -> None:
    a = service.acquire("web", "gpu", slots=3, ttl_ms=60_000, session="r1")
    b = service.acquire("ops", "gpu", slots=3, ttl_ms=60_000)
    moved = service.transfer("web", a.key, a.token, "r2")
    assert (moved.key, moved.session, _slot(moved)) == (a.key, "r2", ("gpu", 0, 3))
    assert moved.token > max(a.token, b.token)  # the semaphore's counter, not the key's own
    c = service.acquire("dev", "gpu", slots=3, ttl_ms=60_000)
    tokens = [moved.token, b.token, c.token]
    assert len(set(tokens)) == 3 and c.token > moved.token
    with pytest.raises(StaleToken):
        service.write("web", a.key, a.token, "late")
    assert service.write("web", a.key, moved.token, "mine").version == 1
