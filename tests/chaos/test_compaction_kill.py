"""Chaos: a server compacting a large backlog is ``kill -9``ed mid-pass, several times at random
moments, and started again; on SQLite and PostgreSQL.

The backlog: thousands of keys whose last lease ended eight days ago (past the 7-day retention),
written straight into the database as a long history leaves them, some with refusals counted,
and op_ids two days old (past the 24-hour window). Beside them: live leases and keys that ended
just now (within the retention), which compaction must leave alone. The server compacts on its
schedule (``TENURE_COMPACT_EVERY_S=1``) and is killed at random moments while it does, then
left to finish. Then: nothing live was lost; every key of the backlog, acquired again, gets a
larger token than the one recorded before (no token reused); the all-time refusal count did not
change; the retired-token mark covers the largest deleted token.
"""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any

import psycopg
import pytest

import tenure
from procs import ServeAt, wait_for

pytestmark = pytest.mark.slow

BACKLOG = 100_000
SAMPLE = 3_000  # keys of the backlog acquired again at the end (and the largest token's)
OPS = 3_000
DAY = 86_400_000
KILLS = 3
LIVE_MS = 600_000


def test_kill_9_mid_compaction_loses_nothing_and_reuses_no_token(store_url: str) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    context = f"seed {seed}"
    old = {f"old/{i:05d}": rnd.randint(1, 10**9) for i in range(BACKLOG)}
    refusals = {key: rnd.choice((0, 0, 0, 2)) for key in old}
    now = int(time.time() * 1000)
    _write_backlog(store_url, old, refusals, now)
    live, recent, before = _alongside(store_url)

    server = ServeAt(store_url, TENURE_COMPACT_EVERY_S="1")
    try:
        for n in range(KILLS):
            left = _idle(store_url)
            wait_for(lambda left=left: _idle(store_url) < left, 60, "a pass under way")
            time.sleep(rnd.uniform(0, 0.1))  # a random moment of the pass
            server.kill()
            print(f"{context}: kill {n + 1}: {_idle(store_url)} of {BACKLOG} idle rows left")
            server.restart()
        wait_for(lambda: _idle(store_url) == 0, 120, "the backlog compacted")
        wait_for(lambda: _op_rows(store_url) == 0, 60, "the op_ids compacted")
    finally:
        server.kill()

    store = tenure.open_store(store_url)
    try:
        service = tenure.Service(store)
        for key, lease in live.items():  # nothing live was lost
            now_lease = service.get(key)
            assert (now_lease.state, now_lease.token) == ("live", lease.token), (context, key)
        for key, token in recent.items():  # within the retention: kept
            assert store.get(key) is not None and store.get(key).token == token, (context, key)
        assert store.conflict_total() == before, context  # (the backlog's refusals included)
        assert before >= sum(refusals.values()), context
        assert store.retired_token() >= max(old.values()), context
        largest = max(old, key=old.__getitem__)
        for key in [largest, *rnd.sample(sorted(old), SAMPLE)]:  # no token reused
            token = old[key]
            again = service.acquire("checker", key, ttl_ms=60_000).token
            assert again > token, (context, key, token, again)
    finally:
        store.close()


def _alongside(url: str) -> tuple[dict[str, tenure.Lease], dict[str, int], int]:
    """Live leases and keys that ended just now, made through the service; the refusals
    counted so far."""
    store = tenure.open_store(url)
    try:
        service = tenure.Service(store)
        live = {
            f"live/{i}": service.acquire("alice", f"live/{i}", ttl_ms=600_000) for i in range(20)
        }
        recent = {}
        for i in range(20):
            token = service.acquire("bob", f"recent/{i}").token
            service.release("bob", f"recent/{i}", token)
            recent[f"recent/{i}"] = token
        return live, recent, store.conflict_total()
    finally:
        store.close()


LEASE_ROW = (
    "INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at,"
    " ended, conflicts) VALUES ({p}, {p}, 'gone', 30000, {p}, {p}, {p}, 'released', {p})"
)
OP_ROW = (
    "INSERT INTO tenure_fenced_ops (key, token, op_id, value, version, writer, at)"
    " VALUES ({p}, {p}, {p}, '1', 1, 'gone', {p})"
)


def _write_backlog(url: str, old: dict[str, int], refusals: dict[str, int], now: int) -> None:
    """The rows a long history leaves: ended eight days ago; op_ids two days old."""
    tenure.open_store(url).close()  # migrated
    ended = now - 8 * DAY
    leases = [(k, t, ended - 30_000, ended - 30_000, ended, refusals[k]) for k, t in old.items()]
    keys = list(old)
    ops = [(keys[i], old[keys[i]], f"op-{i}", now - 2 * DAY) for i in range(OPS)]
    _run_many(url, [(LEASE_ROW, leases), (OP_ROW, ops)])


def _run_many(url: str, batches: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
    if url.startswith("sqlite://"):
        conn = sqlite3.connect(url.removeprefix("sqlite://").removeprefix("/"))
        try:
            with conn:
                for sql, rows in batches:
                    conn.executemany(sql.format(p="?"), rows)
        finally:
            conn.close()
        return
    with psycopg.connect(url) as pg, pg.cursor() as cur:
        for sql, rows in batches:
            table_and_columns = sql.split(" VALUES ")[0].removeprefix("INSERT INTO ")
            with cur.copy(f"COPY {table_and_columns} FROM STDIN".encode()) as copy:
                for row in rows:
                    copy.write_row(_pg_row(sql, row))


def _pg_row(sql: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """``row`` with the constants of ``sql``'s VALUES filled in, for COPY."""
    values = [v.strip() for v in sql.split(" VALUES (")[1].rstrip(")").split(",")]
    given = iter(row)
    return tuple(next(given) if v == "{p}" else v.strip("'") for v in values)


def _count(url: str, sql: str) -> int:
    if url.startswith("sqlite://"):
        conn = sqlite3.connect(url.removeprefix("sqlite://").removeprefix("/"))
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    with psycopg.connect(url, autocommit=True) as pg:
        row = pg.execute(sql.encode()).fetchone()
        assert row is not None
        return int(row[0])


def _idle(url: str) -> int:
    return _count(url, "SELECT count(*) FROM tenure_leases WHERE key LIKE 'old/%'")


def _op_rows(url: str) -> int:
    return _count(url, "SELECT count(*) FROM tenure_fenced_ops")
