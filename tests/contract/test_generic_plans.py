"""On PostgreSQL the key transactions' prepared statements run on generic plans, made once per
connection (``SET LOCAL plan_cache_mode = force_generic_plan`` where each begins): none is
planned again at each execution. A generic plan knows no parameter value, so each one of them
must still read the tables that grow with use through an index, whatever the values: checked on
the plans themselves (``EXPLAIN (GENERIC_PLAN)``), with those tables full and analyzed."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

import tenure
from tenure import Service
from tenure.store.postgres import tx

#: rows in the tables that grow with use (the others hold a row per principal, per prefix…)
BULK = """
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at,
                           due_at, ended)
SELECT 'bulk/' || (i % 100) || '/' || i, i, 'p' || (i % 50), 1000, 0, 0, 1000 + i, 1000 + i,
       CASE WHEN i % 3 = 0 THEN 'released' END
FROM generate_series(1, 20000) AS i;
INSERT INTO tenure_events (at, type, key, holder, token)
SELECT i, 'acquired', 'bulk/' || (i % 100) || '/' || i, 'p' || (i % 50), i
FROM generate_series(1, 50000) AS i;
INSERT INTO tenure_items (id, title, status, assignee, epoch, created_by, created_at, updated_at)
SELECT 'item-' || i, 't', CASE WHEN i % 2 = 0 THEN 'open' ELSE 'done' END, 'p' || (i % 50), 1,
       'p0', i, i
FROM generate_series(1, 20000) AS i;
INSERT INTO tenure_item_ops (item, op_id, result, at)
SELECT 'item-' || i, 'op', '{}', i FROM generate_series(1, 20000) AS i;
INSERT INTO tenure_fenced (key, token, value, version, updated_at)
SELECT 'bulk/' || i, i, '{}', 1, i FROM generate_series(1, 20000) AS i;
ANALYZE;
"""
GROWING = ("tenure_leases", "tenure_events", "tenure_items", "tenure_item_ops", "tenure_fenced")


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)  # plans are PostgreSQL's
def test_key_transactions_run_on_plans_made_once(
    backend: str, fresh_url: Callable[[], str]
) -> None:
    store = tenure.open_store(fresh_url(), min_size=1, max_size=1)  # one connection: its plans
    try:
        service, groups = Service(store), store.group_commit()
        assert isinstance(groups, tenure.store.base.ThreadGroups)
        keys = [f"plans/{i}/k" for i in range(4)]  # keys under prefixes: the subtree reads run
        for _ in range(8):  # more than the five custom plans PostgreSQL tries by default
            with service.deferring(), groups.group(keys):  # a group, as the server runs one
                leases = [service.acquire("alice", key, ttl_ms=30_000) for key in keys]
            for key, lease in zip(keys, leases, strict=True):
                service.release("alice", key, lease.token)  # a key transaction alone
        with store.pool.connection() as conn:
            plans = conn.execute(
                "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE generic_plans + custom_plans > 0"
            ).fetchall()
    finally:
        store.close()
    ran = {name: (generic, custom) for name, generic, custom in plans}
    assert ran["tenure_subtree_grants_above"][0] >= 8  # the statement that was planned each time
    assert ran["tenure_lock_leases_above"][0] >= 8 and ran["tenure_lock_lease"][0] >= 8
    assert {name: custom for name, (_, custom) in ran.items() if custom} == {}


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_every_generic_plan_reads_the_growing_tables_through_an_index(
    backend: str, fresh_url: Callable[[], str]
) -> None:
    with psycopg.connect(fresh_url(), autocommit=True) as conn:
        if conn.info.server_version < 160000:  # EXPLAIN (GENERIC_PLAN) is 16's
            pytest.skip("EXPLAIN (GENERIC_PLAN) needs PostgreSQL 16 or later")
        conn.execute(BULK)
        scans = {}
        for name in tx.HOT:
            sql = tx.prepared(name)
            plan = [row[0] for row in conn.execute(f"EXPLAIN (GENERIC_PLAN) {sql}").fetchall()]
            seq = [
                line.strip() for line in plan if any(f"Seq Scan on {t} " in line for t in GROWING)
            ]
            if seq:
                scans[name] = seq
    assert scans == {}
