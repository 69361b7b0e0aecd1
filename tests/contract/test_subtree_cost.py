"""A subtree acquisition costs the unended leases under its prefix, never its history: the rows
of the leases that ended under it (kept until compaction) are not read. What the read visits is
counted by the database itself, not timed: on SQLite the virtual machine's steps (a progress
handler called at every one), on PostgreSQL the rows each scan of the plan produced or filtered
out (``EXPLAIN ANALYZE`` of the store's own prepared statement, through its custom plans and its
generic one, before and after the table's statistics are gathered). And with that history
there, the decision is the same as ever."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tenure
from tenure import LeaseHeld, Service
from tenure.core.subtree import upper_bound
from tenure.store.postgres import tx as pg_tx
from tenure.store.sqlfiles import queries

PREFIX = "hist/"
ENDED = 3_000
#: what the read may visit beyond the empty prefix's, whatever lies ended under it
SLACK = 50

SQLITE_ENDED = """
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < :n)
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at, ended)
SELECT :prefix || printf('%06d', i), 1, 'bob', 1000, :at, :at, :at + 1000,
       CASE i % 3 WHEN 0 THEN 'expired' WHEN 1 THEN 'released' ELSE 'force_released' END
FROM s
"""
PG_ENDED = """
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at, ended)
SELECT %(prefix)s || lpad(i::text, 6, '0'), 1, 'bob', 1000, %(at)s, %(at)s, %(at)s + 1000,
       CASE i %% 3 WHEN 0 THEN 'expired' WHEN 1 THEN 'released' ELSE 'force_released' END
FROM generate_series(1, %(n)s) AS i
"""
SCANS = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan", "Bitmap Heap Scan")


def bury(backend: str, url: str, n: int, at: int) -> None:
    """``n`` ended leases under :data:`PREFIX`, written straight into the table (a long
    history: what acquisitions and releases leave behind)."""
    params = {"prefix": PREFIX, "n": n, "at": at}
    if backend == "sqlite":
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(SQLITE_ENDED, params)
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(PG_ENDED, params)


def visited(backend: str, url: str) -> int:
    """What the store's reads of the unended leases under :data:`PREFIX` visit (the most over
    their runs): SQLite's virtual machine steps, PostgreSQL's rows scanned (a key's transaction
    and a group's, which locks them ahead)."""
    params = {"prefix": PREFIX, "upper": upper_bound(PREFIX), "holder": "alice", "session": ""}
    if backend == "sqlite":
        return _sqlite_steps(url, params)
    group = {"keys": [PREFIX], "above": [], "lo": [PREFIX], "hi": [upper_bound(PREFIX)]}
    return max(
        _pg_rows(url, name, args, analyze)
        for name, args in (("nearby_under", {**params, "skip": []}), ("lock_leases_tree", group))
        for analyze in (False, True)
    )


def _sqlite_steps(url: str, params: dict[str, Any]) -> int:
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.set_progress_handler(step, 1)
        conn.execute(queries("sqlite")["nearby_under"], params).fetchall()
    return steps


def _pg_rows(url: str, name: str, params: dict[str, Any], analyze: bool) -> int:
    """The rows the scans of the plan of the store's statement ``name`` produced or filtered
    out, the most over seven runs of the prepared statement (the first five planned for their
    parameters, then the generic plan)."""
    order = pg_tx.PARAMS[name]
    args = ", ".join("%s::text[]" if isinstance(params[n], list) else "%s::text" for n in order)
    explain = f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE tenure_{name}({args})"
    with psycopg.connect(url, autocommit=True) as conn:
        if analyze:
            conn.execute("ANALYZE tenure_leases")
        conn.execute(f"PREPARE tenure_{name} AS {pg_tx.prepared(name)}")
        cur = psycopg.ClientCursor(conn)
        most = 0
        for _ in range(7):
            with conn.transaction():
                (plan,) = cur.execute(explain, [params[n] for n in order]).fetchone() or ()
            most = max(most, sum(_scanned(plan[0]["Plan"])))
    return most


def _scanned(node: dict[str, Any]) -> Iterator[int]:
    if node["Node Type"] in SCANS:
        yield int(node["Actual Rows"] * node.get("Actual Loops", 1))
        yield int(node.get("Rows Removed by Filter", 0))
        yield int(node.get("Rows Removed by Index Recheck", 0))
    for child in node.get("Plans", []):
        yield from _scanned(child)


def test_the_read_under_a_prefix_does_not_visit_the_ended_leases(
    service: Service, backend: str, store_url: str, clock: tenure.FakeClock
) -> None:
    service.acquire("bob", PREFIX + "live")
    empty = visited(backend, store_url)
    bury(backend, store_url, ENDED, clock.now_ms())
    assert visited(backend, store_url) <= empty + SLACK  # main: thousands more
    # and an acquisition decides as before: the live lease among the ended ones blocks it
    with pytest.raises(LeaseHeld) as refused:
        service.acquire("alice", PREFIX, scope="subtree")
    assert (refused.value.held_key, refused.value.holder) == (PREFIX + "live", "bob")


def test_a_history_under_a_prefix_blocks_nothing(
    service: Service, backend: str, store_url: str, clock: tenure.FakeClock
) -> None:
    """Ended leases (released, expired, force-released) never block; a lease that expired
    without being marked ended yet is judged expired; a live one blocks until it is released."""
    bury(backend, store_url, 500, clock.now_ms() - 10_000)
    lapsed = service.acquire("bob", PREFIX + "lapsed", ttl_ms=1_000)
    clock.advance(2_000)  # its deadline passed; nothing marked it ended
    row = service.store.get(PREFIX + "lapsed")
    assert row is not None and row.ended is None
    held = service.acquire("carol", PREFIX + "deep/held")
    with pytest.raises(LeaseHeld, match="hist/deep/held"):
        service.acquire("alice", PREFIX, scope="subtree")
    service.release("carol", PREFIX + "deep/held", held.token)
    mine = service.acquire("alice", PREFIX, scope="subtree")
    assert mine.key == PREFIX and lapsed.token >= 1
    with pytest.raises(LeaseHeld, match="hist/"):
        service.acquire("bob", PREFIX + "000001")  # an ended key under it: now held by alice
