"""A principal's bound on live leases on PostgreSQL, with the groups of several servers: far
from the bound a group's commit does not wait for another server's group giving the same
principal new leases (each holds a slot a new lease and the principal's lock shared), near it
the group takes the lock whole and counts exactly. The racing servers: tests/contract/
test_quotas.py (the bound reached and never passed)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tenure import Service
from tenure.core.quotas import Quotas
from tenure.store.postgres.store import PostgresStore
from tenure.store.postgres.tx import Group

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@pytest.fixture
def in_flight(pg: PostgresStore) -> Iterator[Group]:
    """Another server's group that gave alice one new lease, its bound checked (her slot and
    her lock taken as a group's commit takes them), its ``COMMIT`` not sent yet."""
    with psycopg.connect(pg.url, autocommit=True) as other:
        group = Group(other)
        group.checks["alice"] = (Quotas().live_leases, pg.now_ms(), 1)
        group.queue_bounds()
        group.batch.send()
        yield group
        other.execute("ROLLBACK")


def impatient(pg: PostgresStore, limit: int) -> Service:
    """A service on connections that give up on any lock they wait for after 2 s."""
    sep = "&" if "?" in pg.url else "?"
    return Service(
        PostgresStore(f"{pg.url}{sep}options=-c%20lock_timeout%3D2000"),
        quotas=Quotas(live_leases=limit),
    )


def test_a_group_far_from_the_bound_does_not_wait_for_another_servers(
    pg: PostgresStore, in_flight: Group
) -> None:
    svc = impatient(pg, Quotas().live_leases)
    try:
        with svc.store.group():
            svc.acquire("alice", "a")
            svc.acquire("alice", "b")
        assert [lease.key for lease in svc.list(holder="alice")] == ["a", "b"]
    finally:
        svc.store.close()


def test_a_group_near_the_bound_waits_for_the_groups_in_flight(
    pg: PostgresStore, in_flight: Group
) -> None:
    """A bound no larger than the slots: the lock is taken whole, after the group in flight
    (which never commits here: the wait ends at the connection's lock_timeout)."""
    svc = impatient(pg, Group.SLOTS)
    try:
        with pytest.raises(psycopg.errors.LockNotAvailable), svc.store.group():
            svc.acquire("alice", "a")
        assert svc.list(holder="alice") == []
    finally:
        svc.store.close()
