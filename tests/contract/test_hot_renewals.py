"""A renewal changes no indexed column of the lease table: on PostgreSQL it is a heap-only (HOT)
update, counted by the database itself (``pg_stat_user_tables.n_tup_hot_upd``). The reaper and
the reads that look leases up by deadline still see every renewal: a renewed lease is not
recorded as expired at its first deadline, and the earliest deadline is the renewed one's."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources

import psycopg
import pytest

import tenure
from tenure import Service

UPDATES = """
SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'tenure_leases'
"""


def lease_updates(url: str, at_least: int, within_s: float = 30.0) -> tuple[int, int]:
    """PostgreSQL's count of the lease table's updates and of the heap-only ones, once it
    counts ``at_least`` updates (each backend reports its counts when it ends or idles:
    waited for, bounded)."""
    deadline = time.monotonic() + within_s
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(UPDATES).fetchone()
            assert row is not None
            if row[0] >= at_least or time.monotonic() > deadline:
                return int(row[0]), int(row[1])
            time.sleep(0.1)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)  # heap-only updates are its own
def test_renewals_on_postgresql_are_heap_only_updates(
    backend: str, store_url: str, make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    store = make_store()
    service = Service(store)
    keys = [f"hot/{i}" for i in range(4)]
    tokens = {key: service.acquire("alice", key, ttl_ms=30_000).token for key in keys}
    store.close()  # its connections end, and report their counts
    before, hot_before = lease_updates(store_url, at_least=len(keys))

    store = make_store()
    service = Service(store)
    for _ in range(3):  # each one moves the deadline
        clock.advance(10_000)
        for key in keys:
            service.renew("alice", key, tokens[key])
        clock.advance(1_000)
        service.acquire("alice", keys[0], ttl_ms=30_000)  # a holder's acquisition renews
        clock.advance(1_000)
        service.renew_all("alice", keys)
    assert [service.get(key).expires_at for key in keys] == [clock.now_ms() + 30_000] * 4
    store.close()
    renewals = 3 * (len(keys) + 1 + len(keys))
    after, hot_after = lease_updates(store_url, at_least=before + renewals)
    assert after - before == renewals
    assert hot_after - hot_before == renewals


def test_a_renewed_lease_is_not_reaped_at_its_first_deadline(
    service: Service, clock: tenure.FakeClock
) -> None:
    first = service.acquire("alice", "a", ttl_ms=1_000)
    service.acquire("bob", "b", ttl_ms=1_000)
    for _ in range(3):
        clock.advance(600)
        service.renew("alice", "a", first.token)
    assert [e.key for e in service.reap()] == ["b"]
    assert service.store.next_deadline() == clock.now_ms() + 1_000
    assert service.reap() == []
    clock.advance(1_000)
    assert [e.key for e in service.reap()] == ["a"]
    assert service.store.next_deadline() is None


def test_renewed_leases_past_their_first_deadline_do_not_hold_up_the_reaper(
    service: Service, clock: tenure.FakeClock
) -> None:
    """More renewed leases than a reap's batch came due first: the lapsed one behind them is
    still recorded by one reap."""
    held = [service.acquire("alice", f"r{i}", ttl_ms=1_000) for i in range(5)]
    clock.advance(10)
    service.acquire("bob", "z", ttl_ms=1_000)
    clock.advance(900)
    for lease in held:
        service.renew("alice", lease.key, lease.token)
    clock.advance(200)
    assert [e.key for e in service.reap(limit=2)] == ["z"]
    assert service.reap(limit=2) == []
    assert sorted(x.key for x in service.list()) == [f"r{i}" for i in range(5)]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)  # the due column is its own
def test_leases_from_before_the_due_column_are_renewed_and_reaped(
    backend: str,
    blank_url: Callable[[], str],
    make_store: Callable[..., tenure.Store],
    clock: tenure.FakeClock,
) -> None:
    """A PostgreSQL database written before migration 0023: its live lease starts due at its
    deadline, its renewals are kept, and it is recorded as expired at its last deadline."""
    url = blank_url()
    folder = resources.files("tenure.store").joinpath("sql", "postgres", "migrations")
    names = sorted(f.name for f in folder.iterdir() if f.name.endswith(".sql"))
    upto = names.index(next(n for n in names if n.endswith("_hot_renewals.sql")))
    now = clock.now_ms()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE tenure_schema (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at bigint NOT NULL)"
        )
        for version, name in enumerate(names[:upto], start=1):
            conn.execute(folder.joinpath(name).read_text().encode())
            conn.execute("INSERT INTO tenure_schema VALUES (%s, %s, 0)", (version, name[5:-4]))
        conn.execute(
            "INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at,"
            " expires_at) VALUES ('old', 3, 'web', 1000, %s, %s, %s)",
            (now, now, now + 1_000),
        )
    service = Service(make_store(url=url))
    assert service.store.next_deadline() == now + 1_000
    clock.advance(900)
    service.renew("web", "old", 3)
    clock.advance(900)
    assert service.reap() == []
    clock.advance(100)
    assert [(e.key, e.token) for e in service.reap()] == [("old", 3)]
