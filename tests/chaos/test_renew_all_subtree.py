"""A renew-all in flight and a subtree acquisition over the same lease, on PostgreSQL.

``renew-all`` takes no prefix locks: it locks its holder's rows, reads the instant and renews
them in one statement, which for many leases runs for seconds. Here holder ``x`` holds many
leases (``b/…``, far from the tree) and one short one in the tree (``t/a``, or the subtree
``t/``). Its renew-all is made to read its instant while that lease is still live (a second
connection holds the lease's row until just before it expires, so the renew-all waits there
after locking every other row), and the lease expires while the renewal statement is still
running. Then ``y`` asks for the lease that conflicts with it (the subtree ``t/`` over ``t/a``,
or ``t/a`` under the subtree ``t/``). Whatever the timing, the two must never both be live:
either ``y`` is refused, naming ``x``, or ``x``'s renewal does not count the lease as renewed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import tenure
from tenure import LeaseHeld
from tenure.core.quotas import Quotas
from tenure.store.postgres.store import PostgresStore

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("backend", ["postgres"], indirect=True)]

BULK = 150_000  # x's other leases: the renewal statement runs for seconds
# x holds the bulk and acquires one more: a bound on live leases above what x holds
QUOTAS = Quotas(live_leases=BULK + 10)
TTL_MS = 6_000  # the lease in the tree
MARGIN_MS = 800  # the renew-all reads its instant this long before that lease expires
WAIT_S = 120
OTHER = "u/x"  # a key after the tree's, in a group with y's

BULK_SQL = """
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at)
SELECT 'b/' || lpad(i::text, 7, '0'), 1, 'x', 600000, n, n, n + 600000
FROM generate_series(1, %(count)s) AS i,
     (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS n) AS t
"""
WAITING_SQL = """
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'
"""


def _until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"waited {WAIT_S} s for {what}"
        time.sleep(0.02)


def race(
    url: str, x_key: str, x_scope: str, y_key: str, y_scope: str, grouped: bool = False
) -> None:
    """x holds ``x_key`` and the bulk; its renew-all is in flight as that lease expires and y
    asks for ``y_key`` (``grouped``: in a group commit with another key after it, its keys
    locked ahead as the server's executor does): never both live."""
    sx = tenure.Service(tenure.open_store(url), quotas=QUOTAS)
    sy = tenure.Service(tenure.open_store(url), quotas=QUOTAS)
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(BULK_SQL, {"count": BULK})
            admin.execute("VACUUM ANALYZE tenure_leases")
        lease = sx.acquire("x", x_key, TTL_MS, scope=x_scope)
        got: dict[str, Any] = {}
        with psycopg.connect(url) as holder:  # holds x_key's row: the renew-all waits there
            holder.execute("SELECT 1 FROM tenure_leases WHERE key = %s FOR UPDATE", (x_key,))
            renewing = threading.Thread(target=_renew_all, args=(sx, got), daemon=True)
            renewing.start()
            with psycopg.connect(url, autocommit=True) as watch:
                _until(lambda: _waiting(watch) > 0, "the renew-all to wait for the row")
            _until(lambda: sy.store.now_ms() >= lease.expires_at - MARGIN_MS, "the instant")
            holder.commit()
        _until(lambda: sy.store.now_ms() > lease.expires_at, f"{x_key} to expire")
        try:
            mine = _acquire(sy, y_key, y_scope, grouped)
        except LeaseHeld as held:
            assert held.holder == "x", held
            mine = None
        renewing.join(WAIT_S)
        assert not renewing.is_alive(), "the renew-all never ended"
        assert "error" not in got, got.get("error")
        renewed = {r.key: r for r in got["result"].renewed}
        assert len(renewed) >= BULK
        # y got it while x's renewed lease was live (on a loaded machine the renew-all may run
        # longer than the lease's ttl: then y waited for it and found the renewal lapsed too)
        if mine is not None and x_key in renewed and mine.acquired_at < renewed[x_key].expires_at:
            pytest.fail(
                f"two live leases at once: y's {y_key} ({y_scope}) until {mine.expires_at},"
                f" x's {x_key} ({x_scope}) renewed until {renewed[x_key].expires_at}"
            )
    finally:
        sx.store.close()
        sy.store.close()


def _acquire(service: tenure.Service, key: str, scope: str, grouped: bool) -> tenure.Lease:
    if not grouped:
        return service.acquire("y", key, 60_000, scope=scope)
    store = service.store
    assert isinstance(store, PostgresStore)
    with store.group([key, OTHER]):
        service.acquire("y", OTHER, 60_000)
        return service.acquire("y", key, 60_000, scope=scope)


def _renew_all(service: tenure.Service, got: dict[str, Any]) -> None:
    try:
        got["result"] = service.renew_all("x")
    except BaseException as exc:  # reported by the test
        got["error"] = exc


def _waiting(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(WAITING_SQL).fetchone()
    return int(row[0]) if row else 0


def test_subtree_acquisition_over_a_lease_being_renewed(fresh_url: Callable[[], str]) -> None:
    race(fresh_url(), "t/a", "key", "t/", "subtree")


def test_key_acquisition_under_a_subtree_being_renewed(fresh_url: Callable[[], str]) -> None:
    race(fresh_url(), "t/", "subtree", "t/a", "key")


def test_subtree_acquisition_in_a_group(fresh_url: Callable[[], str]) -> None:
    race(fresh_url(), "t/a", "key", "t/", "subtree", grouped=True)


def test_key_acquisition_in_a_group(fresh_url: Callable[[], str]) -> None:
    race(fresh_url(), "t/", "subtree", "t/a", "key", grouped=True)
