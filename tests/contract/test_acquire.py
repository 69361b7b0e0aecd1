"""Invariants 1 (one holder) and 8 (conflicts are named; re-acquiring keeps the token)."""

from __future__ import annotations

import threading
import time

import pytest

import tenure
from tenure import LeaseHeld, Service


def test_acquire_grants_a_lease_on_the_store_clock(
    service: Service, clock: tenure.FakeClock
) -> None:
    t0 = clock.now_ms()
    lease = service.acquire("alice", "jobs/a", ttl_ms=5_000, task="run-1", meta={"n": 1})
    assert lease == tenure.Lease(
        key="jobs/a",
        holder="alice",
        task="run-1",
        token=1,
        ttl_ms=5_000,
        acquired_at=t0,
        renewed_at=t0,
        expires_at=t0 + 5_000,
        renewals=0,
        meta={"n": 1},
        state="live",
    )
    assert service.get("jobs/a") == lease
    assert service.list() == [lease]


def test_acquire_without_ttl_uses_the_default_ttl(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "jobs/a")
    assert lease.ttl_ms == 30_000
    assert lease.expires_at == clock.now_ms() + 30_000
    assert lease.task is None
    assert lease.meta == {}


def test_conflict_names_holder_task_and_expires_at(
    service: Service, clock: tenure.FakeClock
) -> None:
    held = service.acquire("alice", "jobs/a", ttl_ms=5_000, task="run-1")
    clock.advance(1_000)
    with pytest.raises(LeaseHeld) as caught:
        service.acquire("bob", "jobs/a", ttl_ms=5_000, task="run-2")
    err = caught.value
    assert (err.key, err.holder, err.task, err.expires_at) == (
        "jobs/a",
        "alice",
        "run-1",
        held.expires_at,
    )
    assert err.token == 1
    assert err.code == "lease_held" and err.status == 409
    problem = err.to_problem()
    assert problem["holder"] == "alice" and problem["expires_at"] == held.expires_at
    # The refusal changed nothing about the lease.
    assert service.get("jobs/a") == held


def test_one_holder_up_to_the_deadline_then_the_next(
    service: Service, clock: tenure.FakeClock
) -> None:
    held = service.acquire("alice", "jobs/a", ttl_ms=2_000)
    clock.set(held.expires_at - 1)
    with pytest.raises(LeaseHeld):
        service.acquire("bob", "jobs/a")
    assert [lease.holder for lease in service.list()] == ["alice"]
    clock.set(held.expires_at)  # the deadline itself is no longer live
    taken = service.acquire("bob", "jobs/a", ttl_ms=2_000)
    assert (taken.holder, taken.token, taken.acquired_at) == ("bob", 2, held.expires_at)
    assert [lease.holder for lease in service.list()] == ["bob"]
    with pytest.raises(LeaseHeld) as caught:
        service.acquire("alice", "jobs/a")
    assert caught.value.holder == "bob"


def test_concurrent_acquirers_get_exactly_one_winner(make_store, clock: tenure.FakeClock) -> None:
    # Two stores on one database (two server instances), several threads each.
    services = [Service(make_store()), Service(make_store())]
    names = [f"agent-{i}" for i in range(8)]
    barrier = threading.Barrier(len(names))
    won: list[tenure.Lease] = []
    refused: list[LeaseHeld] = []
    lock = threading.Lock()

    def contend(i: int) -> None:
        barrier.wait()
        try:
            lease = services[i % 2].acquire(names[i], "jobs/hot", ttl_ms=60_000)
        except LeaseHeld as err:
            with lock:
                refused.append(err)
        else:
            with lock:
                won.append(lease)

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(len(names))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(won) == 1
    assert won[0].token == 1
    assert len(refused) == len(names) - 1
    assert {err.holder for err in refused} == {won[0].holder}
    assert services[0].contention("jobs/hot") == len(names) - 1
    assert [lease.holder for lease in services[1].list()] == [won[0].holder]


def test_reacquiring_your_own_live_lease_renews_it_and_keeps_the_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    t0 = clock.now_ms()
    first = service.acquire("alice", "jobs/a", ttl_ms=10_000, task="run-1", meta={"a": 1})
    clock.advance(4_000)
    again = service.acquire("alice", "jobs/a", ttl_ms=20_000)
    assert again.token == first.token == 1
    assert again.acquired_at == t0
    assert again.renewed_at == t0 + 4_000
    assert again.expires_at == t0 + 24_000
    assert again.renewals == 1
    assert again.ttl_ms == 20_000
    # Task and meta stay unless given anew.
    assert (again.task, again.meta) == ("run-1", {"a": 1})
    third = service.acquire("alice", "jobs/a", ttl_ms=10_000, task="run-2", meta={"b": 2})
    assert (third.token, third.task, third.meta, third.renewals) == (1, "run-2", {"b": 2}, 2)
    # A shorter ttl never shortens the lease.
    assert third.expires_at == t0 + 24_000
    assert [e.type for e in service.events(key="jobs/a")] == ["acquired"]


def test_contention_is_counted_per_key_and_recorded_as_conflict_events(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "jobs/a", ttl_ms=5_000, task="run-1")
    service.acquire("alice", "jobs/b", ttl_ms=5_000)
    for who in ("bob", "carol"):
        with pytest.raises(LeaseHeld):
            service.acquire(who, "jobs/a", task=f"{who}-task")
    assert service.contention("jobs/a") == 2
    assert service.contention("jobs/b") == 0
    assert service.contention("jobs/never") == 0
    conflicts = service.events(type="conflict")
    assert [(e.key, e.actor, e.holder, e.task, e.token) for e in conflicts] == [
        ("jobs/a", "bob", "alice", "run-1", 1),
        ("jobs/a", "carol", "alice", "run-1", 1),
    ]
    assert conflicts[0].data == {"wanted_task": "bob-task"}
    assert service.events(type="conflict", key="jobs/b") == []
    # The count is the key's history: it outlives the lease it was counted against.
    clock.advance(5_000)
    service.acquire("bob", "jobs/a")
    assert service.contention("jobs/a") == 2


def test_list_filters_live_leases_by_prefix_holder_and_task(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "jobs/a", ttl_ms=5_000, task="t1")
    service.acquire("bob", "jobs/b", ttl_ms=5_000, task="t2")
    service.acquire("alice", "locks/c", ttl_ms=5_000, task="t2")
    service.acquire("alice", "jobs/short", ttl_ms=1_000)
    service.acquire("carol", "jobs/gone", ttl_ms=5_000)
    service.release("carol", "jobs/gone")
    clock.advance(1_000)

    def keys(**filters: str) -> list[str]:
        return [lease.key for lease in service.list(**filters)]

    assert keys() == ["jobs/a", "jobs/b", "locks/c"]
    assert keys(prefix="jobs/") == ["jobs/a", "jobs/b"]
    assert keys(holder="alice") == ["jobs/a", "locks/c"]
    assert keys(task="t2") == ["jobs/b", "locks/c"]
    assert keys(prefix="jobs/", holder="alice", task="t1") == ["jobs/a"]
    assert keys(prefix="nothing/") == []
    assert [lease.key for lease in service.list(limit=2)] == ["jobs/a", "jobs/b"]
    assert all(lease.state == "live" for lease in service.list())


def test_prefix_filter_is_literal_not_a_pattern(service: Service) -> None:
    service.acquire("alice", "a%b/1")
    service.acquire("alice", "axb/2")
    service.acquire("alice", "a_c/3")
    service.acquire("alice", "abc/4")
    assert [lease.key for lease in service.list(prefix="a%")] == ["a%b/1"]
    assert [lease.key for lease in service.list(prefix="a_")] == ["a_c/3"]


def test_unicode_keys_and_meta_round_trip(service: Service) -> None:
    key = "jobs/ünïcødé/日本/🚀"
    meta = {"nested": {"list": [1, 2.5, "x", None, True]}, "emoji": "🚀"}
    lease = service.acquire("alice", key, meta=meta, task="tâche")
    assert service.get(key) == lease
    assert (lease.meta, lease.task) == (meta, "tâche")
    assert [x.key for x in service.list(prefix="jobs/ünï")] == [key]


@pytest.mark.parametrize("key", [" padded key ", "a b", "line\u2028sep", "zero\u200bwidth", "é"])
def test_keys_may_hold_spaces_and_any_non_control_unicode(service: Service, key: str) -> None:
    lease = service.acquire("alice", key)
    assert service.get(key) == lease
    assert [x.key for x in service.list()] == [key]


def test_a_key_never_leased_is_not_found(service: Service) -> None:
    with pytest.raises(tenure.NotFound) as caught:
        service.get("jobs/never")
    assert (caught.value.key, caught.value.what) == ("jobs/never", "lease")
    assert service.list() == []


def test_without_a_fake_clock_the_store_uses_real_milliseconds(make_store) -> None:
    # SQLite uses the process's clock, PostgreSQL its own clock_timestamp(): same host here.
    service = Service(make_store(clock=None))
    before = time.time_ns() // 1_000_000
    lease = service.acquire("alice", "jobs/a", ttl_ms=60_000)
    after = time.time_ns() // 1_000_000
    assert before - 1_000 <= lease.acquired_at <= after + 1_000
    assert lease.expires_at - lease.acquired_at == 60_000
    assert service.get("jobs/a").state == "live"


def test_a_write_reads_the_instant_once_it_holds_the_keys_lock(make_store) -> None:
    """A write that waited for a key reads the clock after it got the key's lock, so its
    instant is not before the commit it waited for (PostgreSQL asks for the instant in the
    same round trip as the row lock: the server answers it once the lock is granted)."""
    holder, waiter = make_store(clock=None), make_store(clock=None)
    Service(holder).acquire("alice", "k", ttl_ms=60_000)
    seen: list[int] = []

    def wait_for_the_key() -> None:
        with waiter.key_tx("k") as tx:
            seen.append(tx.now)

    with holder.key_tx("k") as tx:
        locked_at = tx.now
        thread = threading.Thread(target=wait_for_the_key)
        thread.start()
        time.sleep(0.3)  # the waiter asks for the key (and the clock) meanwhile
    thread.join(10)
    assert seen and seen[0] >= locked_at + 300


@pytest.mark.parametrize("last", ["a", "/", "\ud7ff", "\U0010ffff", "é"])
def test_a_prefix_lists_exactly_the_keys_starting_with_it(service: Service, last: str) -> None:
    """The keys just below, at and above the prefix's range in code point order."""
    prefix = f"p{last}"
    inside = [prefix, f"{prefix}x", f"{prefix}\U0010ffff", f"{prefix}/deep/er"]
    outside = ["p", f"p{chr(ord(last) - 1)}z"]
    if last != "\U0010ffff":
        outside.append(f"p{chr(ord(last) + 1 if ord(last) + 1 != 0xD800 else 0xE000)}")
    for i, key in enumerate(inside + outside):
        service.acquire(f"holder{i}", key, ttl_ms=60_000)
    assert [x.key for x in service.list(prefix=prefix)] == sorted(inside)
    assert [x.key for x in service.list(prefix=prefix, limit=2)] == sorted(inside)[:2]
    got = service.list(prefix=prefix, after=sorted(inside)[1])
    assert [x.key for x in got] == sorted(inside)[2:]
