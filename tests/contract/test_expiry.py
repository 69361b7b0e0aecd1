"""Invariants 3 (expiry is the store's job) and 6 (one recorded `expired` per lapse)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import pytest

import tenure
from tenure import LeaseLost, Reaper, Service


def test_a_lapsed_lease_is_not_live_for_any_read_or_write_without_a_reaper(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "jobs/a", ttl_ms=2_000, task="run-1")
    clock.advance(2_000)
    got = service.get("jobs/a")
    assert (got.state, got.token, got.expires_at) == ("expired", 1, lease.expires_at)
    assert service.list() == []
    assert service.list(holder="alice") == []
    with pytest.raises(LeaseLost) as renew_lost:
        service.renew("alice", "jobs/a", 1)
    assert (renew_lost.value.reason, renew_lost.value.token) == ("expired", 1)
    with pytest.raises(LeaseLost) as extend_lost:
        service.extend("alice", "jobs/a", 1, by_ms=10_000)
    assert extend_lost.value.reason == "expired"
    assert service.release("alice", "jobs/a", 1).released is False
    assert service.renew_all("alice").renewed == ()
    taken = service.acquire("bob", "jobs/a", ttl_ms=2_000)
    assert (taken.holder, taken.token) == ("bob", 2)


def test_the_lapse_is_recorded_once_by_whichever_write_sees_it_first(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "jobs/a", ttl_ms=2_000, task="run-1")
    clock.advance(3_000)
    service.get("jobs/a")  # reads do not write
    with pytest.raises(LeaseLost):
        service.renew("alice", "jobs/a", 1)
    with pytest.raises(LeaseLost):
        service.renew("alice", "jobs/a", 1)
    service.acquire("bob", "jobs/a")
    assert service.reap() == []
    events = service.events(key="jobs/a")
    assert [(e.type, e.holder, e.token) for e in events] == [
        ("acquired", "alice", 1),
        ("expired", "alice", 1),
        ("acquired", "bob", 2),
    ]
    expired = events[1]
    assert expired.task == "run-1"
    assert expired.data == {"held_ms": 2_000, "deadline": clock.now_ms() - 1_000}


def test_reap_records_exactly_one_expired_event_per_lapsed_lease(
    service: Service, clock: tenure.FakeClock
) -> None:
    t0 = clock.now_ms()
    service.acquire("alice", "a", ttl_ms=1_000, task="ta")
    service.acquire("bob", "b", ttl_ms=2_000)
    service.acquire("carol", "c", ttl_ms=10_000)
    service.acquire("dave", "d", ttl_ms=1_000)
    service.release("dave", "d")  # ended already: nothing to reap
    assert service.reap() == []
    clock.advance(2_000)
    reaped = service.reap()
    assert [(e.type, e.key, e.holder, e.token, e.at) for e in reaped] == [
        ("expired", "a", "alice", 1, t0 + 2_000),
        ("expired", "b", "bob", 1, t0 + 2_000),
    ]
    assert reaped[0].task == "ta"
    assert reaped[0].data == {"held_ms": 1_000, "deadline": t0 + 1_000}
    assert reaped[1].data == {"held_ms": 2_000, "deadline": t0 + 2_000}
    assert service.reap() == []
    assert service.events(type="expired") == reaped
    assert service.get("a").state == "expired"
    assert service.get("c").state == "live"
    assert service.get("d").state == "released"


def test_reap_respects_its_limit_and_the_reaper_drains_everything(
    service: Service, clock: tenure.FakeClock
) -> None:
    for i in range(7):
        service.acquire("alice", f"k{i}", ttl_ms=1_000 + i)
    clock.advance(10_000)
    first = service.reap(limit=3)
    assert [e.key for e in first] == ["k0", "k1", "k2"]  # earliest deadlines first
    reaper = Reaper(service, batch=2)
    rest = reaper.run_once()
    assert sorted(e.key for e in rest) == ["k3", "k4", "k5", "k6"]
    assert reaper.recorded == 4
    assert reaper.run_once() == []
    assert len(service.events(type="expired")) == 7


def test_reap_touches_only_expired_leases(service: Service, clock: tenure.FakeClock) -> None:
    for i in range(60):
        service.acquire("alice", f"live/{i:03d}", ttl_ms=60_000)
    for i in range(4):
        service.acquire("bob", f"short/{i}", ttl_ms=1_000)
    before = {lease.key: lease for lease in service.list(prefix="live/")}
    clock.advance(1_000)
    reaped = service.reap(limit=1000)
    assert sorted(e.key for e in reaped) == [f"short/{i}" for i in range(4)]
    assert {lease.key: lease for lease in service.list(prefix="live/")} == before
    assert len(service.list()) == 60
    assert service.reap(limit=1000) == []


def test_two_stores_reaping_concurrently_record_each_expiry_exactly_once(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    services = [Service(make_store()), Service(make_store())]
    count = 40
    for i in range(count):
        services[i % 2].acquire("alice", f"k{i:02d}", ttl_ms=1_000 + i)
    clock.advance(5_000)
    workers = 4
    barrier = threading.Barrier(workers)
    results: list[list[tenure.Event]] = [[] for _ in range(workers)]
    errors: list[BaseException] = []

    def reap(i: int) -> None:
        barrier.wait()
        try:
            while batch := services[i % 2].reap(limit=3):
                results[i].extend(batch)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reap, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert services[0].reap() == [] and services[1].reap() == []
    reaped = [e.key for batch in results for e in batch]
    assert sorted(reaped) == [f"k{i:02d}" for i in range(count)]
    recorded = services[1].events(type="expired", limit=1000)
    assert sorted(e.key for e in recorded) == [f"k{i:02d}" for i in range(count)]
    assert len({e.id for batch in results for e in batch}) == count


def test_next_deadline_is_the_earliest_unrecorded_deadline(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    store = make_store()
    service = Service(store)
    t0 = clock.now_ms()
    assert store.next_deadline() is None
    service.acquire("alice", "a", ttl_ms=5_000)
    service.acquire("alice", "b", ttl_ms=2_000)
    assert store.next_deadline() == t0 + 2_000
    service.release("alice", "b")
    assert store.next_deadline() == t0 + 5_000
    clock.advance(5_000)
    assert store.next_deadline() == t0 + 5_000  # lapsed but not yet recorded
    service.reap()
    assert store.next_deadline() is None


def test_a_running_reaper_records_the_expiry_without_anyone_asking(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "jobs/a", ttl_ms=1_000)
    with Reaper(service, interval=0.02):
        clock.advance(1_000)
        deadline = time.monotonic() + 5
        while not service.events(type="expired") and time.monotonic() < deadline:
            time.sleep(0.01)
    expired = service.events(type="expired")
    assert [(e.key, e.token, e.at) for e in expired] == [("jobs/a", 1, clock.now_ms())]


def test_reapers_racing_new_acquisitions_record_each_lapse_exactly_once(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    reaper_side, acquirer_side = Service(make_store()), Service(make_store())
    keys = [f"k{i:02d}" for i in range(30)]
    for key in keys:
        reaper_side.acquire("alice", key, ttl_ms=1_000)
    clock.advance(1_000)
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def reap() -> None:
        barrier.wait()
        try:
            while reaper_side.reap(limit=2):
                pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def take(order: list[str]) -> None:
        barrier.wait()
        try:
            for key in order:
                with contextlib.suppress(tenure.LeaseHeld):
                    acquirer_side.acquire("bob", key, ttl_ms=60_000)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=reap),
        threading.Thread(target=take, args=(keys,)),
        threading.Thread(target=take, args=(keys[::-1],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert reaper_side.reap() == []
    expired = reaper_side.events(type="expired", limit=1000)
    assert sorted((e.key, e.token) for e in expired) == [(key, 1) for key in keys]
    assert all(reaper_side.get(key).token == 2 for key in keys)
    assert [lease.holder for lease in reaper_side.list()] == ["bob"] * len(keys)
