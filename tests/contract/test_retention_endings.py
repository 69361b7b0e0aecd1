"""The audit trail cannot be flushed: refusals are recorded in windows, and retention by count
never drops an ending (only retention by age does), on every backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from contract._items import ADMIN, ALICE, BOB, CAROL, org
from tenure import Service
from tenure.store.retention import CONFLICT_WINDOW_MS, ENDINGS

HOUR = 3_600_000
TTL = 600_000  # the longest ttl
HAMMER = 150  # refusals of one requester on one key


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    service = org(make_service)
    while service.prune_events(max_count=0, max_age_ms=0):
        pass
    return service


def refuse(svc: Service, who: tenure.Principal, key: str, times: int, **kw: str) -> None:
    for _ in range(times):
        with pytest.raises(tenure.LeaseHeld):
            svc.acquire(who, key, **kw)


def conflicts(svc: Service) -> list[tenure.Event]:
    return svc.events(type="conflict", limit=1000)


def test_refusals_of_one_requester_are_one_event_that_counts_them(svc: Service) -> None:
    svc.acquire(ALICE, "hot", ttl_ms=TTL)
    refuse(svc, BOB, "hot", HAMMER)
    [event] = conflicts(svc)
    assert (event.key, event.holder, event.actor) == ("hot", "alice", "bob")
    assert event.data["repeats"] == HAMMER
    stats = svc.stats()
    assert stats["conflicts"] == HAMMER  # all time
    assert stats["windows"]["1h"]["conflicts"] == HAMMER
    assert stats["hottest_keys"] == [{"key": "hot", "conflicts": HAMMER}]


def test_a_window_per_requester_session_and_lease(svc: Service, clock: tenure.FakeClock) -> None:
    lease = svc.acquire(ALICE, "k", ttl_ms=10 * CONFLICT_WINDOW_MS)
    refuse(svc, BOB, "k", 2)
    refuse(svc, BOB, "k", 2, session="other")  # another session of bob: its own window
    refuse(svc, CAROL, "k", 1)  # another requester
    refuse(svc, BOB, "k", 1)  # interleaved: still bob's first window
    clock.advance(CONFLICT_WINDOW_MS)  # the window closed: a new event
    refuse(svc, BOB, "k", 1)
    svc.release(ALICE, "k", lease.token)
    svc.acquire(CAROL, "k", ttl_ms=TTL)  # another lease: a new event, same window
    refuse(svc, BOB, "k", 2)
    got = [(e.actor, e.holder, e.data.get("wanted_session"), e.data.get("repeats", 1))
           for e in conflicts(svc)]  # fmt: skip
    assert got == [
        ("bob", "alice", None, 3),
        ("bob", "alice", "other", 2),
        ("carol", "alice", None, 1),
        ("bob", "alice", None, 1),
        ("bob", "carol", None, 2),
    ]
    assert svc.stats()["conflicts"] == 9


def test_retention_by_count_keeps_the_endings_and_age_drops_them(
    svc: Service, clock: tenure.FakeClock, make_service: Callable[..., Service]
) -> None:
    svc.acquire(ALICE, "stuck", ttl_ms=TTL)
    svc.force_release(ADMIN, "stuck", "it hung")
    lease = svc.acquire(BOB, "gone", ttl_ms=1_000)
    clock.advance(1_001)
    svc.reap()
    svc.acquire(ALICE, "hot", ttl_ms=TTL)
    for i in range(40):  # a flood of other events: acquisitions and refusals
        svc.acquire(BOB, f"flood/{i}")
        refuse(svc, CAROL, "hot", 1, session=f"s{i}")
    while svc.prune_events(max_count=5, max_age_ms=HOUR, batch=7):
        pass
    kept = svc.events(limit=1000)
    endings = [(e.type, e.key) for e in kept if e.type in ENDINGS]
    assert endings == [("force_released", "stuck"), ("expired", "gone")]
    assert len(kept) == 2 + 5  # the endings, and the newest five of the rest
    assert lease.token >= 1
    stats = svc.stats()
    assert stats["endings"]["force_released"] == 1 and stats["endings"]["expired"] == 1
    assert stats["conflicts"] == 40 and stats["acquisitions"] == 43
    clock.advance(HOUR + 1)  # past the age: the endings go too
    svc.acquire(ALICE, "later")
    while svc.prune_events(max_count=5, max_age_ms=HOUR, batch=7):
        pass
    assert [e.type for e in svc.events(limit=1000)] == ["acquired"]
    again = make_service().stats()  # another server reads the folded totals
    assert again["endings"]["force_released"] == 1 and again["endings"]["expired"] == 1
    assert again["conflicts"] == 40 and again["acquisitions"] == 44
