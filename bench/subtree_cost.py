"""What a subtree acquisition costs over a long history under its prefix, beside a plain one.

    python bench/subtree_cost.py --rows 1000000 --backend sqlite,postgres
    PYTHONPATH=/work/main/src python bench/subtree_cost.py --rows 1000000   # another tree's code

Each backend gets a fresh database (SQLite: a file in a temporary directory; PostgreSQL: a
database created on ``TENURE_BENCH_PG_URL``'s server for the run and dropped after it), opened
and migrated by the ``tenure`` this interpreter imports (the script prints which). ``--rows``
ended leases (released, expired, force-released: what years of acquisitions leave behind) are
written under ``hist/`` straight into the table, one statement per million rows (as
``bench/growth_db.py`` does, with PostgreSQL's ``VACUUM ANALYZE`` after; ``--stale-stats``
leaves the table's statistics as they were before the fill, autovacuum off, as a history that
grew since the last pass), then one live lease of another holder under it. Then, in process
(no HTTP), three timings of ``--reps`` calls each:

- ``subtree``: a subtree acquisition of ``hist/`` (refused: the live lease under it blocks it;
  the read under the prefix is the whole cost), alone;
- ``plain``: an acquisition and release of a plain key (``plain/k``), alone;
- ``plain beside subtree``: the same while another thread acquires ``hist/`` in a loop (on
  SQLite both take the one write lock; on PostgreSQL a plain key outside the prefix takes none
  of its locks).

It prints the median and 95th percentile in milliseconds. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import growth_db

import tenure
from tenure import LeaseHeld, Service

PREFIX = "hist/"
SQLITE_ENDED = """
WITH RECURSIVE s(i) AS (SELECT :a UNION ALL SELECT i + 1 FROM s WHERE i < :b)
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at, ended)
SELECT :prefix || printf('%08d', i), 1, 'agent-' || (i % 1000), 60000, :now - 120000,
       :now - 120000, :now - 60000,
       CASE i % 3 WHEN 0 THEN 'expired' WHEN 1 THEN 'released' ELSE 'force_released' END
FROM s
"""
PG_ENDED = """
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at, ended)
SELECT %(prefix)s || lpad(i::text, 8, '0'), 1, 'agent-' || (i %% 1000), 60000,
       %(now)s - 120000, %(now)s - 120000, %(now)s - 60000,
       CASE i %% 3 WHEN 0 THEN 'expired' WHEN 1 THEN 'released' ELSE 'force_released' END
FROM generate_series(%(a)s::bigint, %(b)s::bigint) AS i
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def database(backend: str, work: Path) -> Iterator[str]:
    """A fresh database of ``backend``: a SQLite file, or a PostgreSQL database dropped after."""
    if backend == "sqlite":
        yield f"sqlite:///{work / 'tenure.db'}"
        return
    import psycopg

    server = os.environ.get("TENURE_BENCH_PG_URL")
    if not server:
        raise SystemExit("subtree_cost.py: set TENURE_BENCH_PG_URL to a PostgreSQL server's URL")
    name = f"tenure_subtree_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        parts = urllib.parse.urlsplit(server)
        yield parts._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def fill(db: str, rows: int, stale: bool) -> float:
    """``rows`` ended leases under :data:`PREFIX`; the seconds taken (with PostgreSQL's
    ``VACUUM ANALYZE``, unless ``stale``: then autovacuum is off for the table and its
    statistics stay those of before the fill, as between two passes over a growing history)."""
    if not rows:
        return 0.0
    if not (stale and growth_db.is_pg(db)):
        return growth_db._bulk(db, SQLITE_ENDED, PG_ENDED, 0, rows, prefix=PREFIX)
    began = time.perf_counter()
    with growth_db.connect(db) as conn:
        conn.execute(b"ALTER TABLE tenure_leases SET (autovacuum_enabled = off)")
        for a in range(0, rows, growth_db.CHUNK):
            b = min(rows, a + growth_db.CHUNK) - 1
            params = {"a": a, "b": b, "now": growth_db.now_ms(), "prefix": PREFIX}
            conn.execute(PG_ENDED.encode(), params)
    return time.perf_counter() - began


def times(call: Callable[[], None], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        began = time.perf_counter()
        call()
        out.append((time.perf_counter() - began) * 1000)
    return out


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"{statistics.median(ms):8.2f} | {p95:8.2f}"


def subtree(svc: Service) -> None:
    with contextlib.suppress(LeaseHeld):
        svc.acquire("alice", PREFIX, scope="subtree")


def plain(svc: Service) -> None:
    lease = svc.acquire("carol", "plain/k")
    svc.release("carol", "plain/k", lease.token)


def beside(svc: Service, reps: int) -> list[float]:
    """``plain`` timed while another thread runs ``subtree`` in a loop (bounded: it stops
    with the timed calls, or after 600 s)."""
    stop = threading.Event()

    def loop() -> None:
        deadline = time.monotonic() + 600
        while not stop.is_set() and time.monotonic() < deadline:
            subtree(svc)

    other = threading.Thread(target=loop, daemon=True)
    other.start()
    try:
        return times(lambda: plain(svc), reps)
    finally:
        stop.set()
        other.join()


def run(backend: str, rows: int, reps: int, work: Path, stale: bool) -> list[str]:
    with database(backend, work) as db:
        tenure.open_store(db).close()  # migrated by this tree's code
        log(f"{backend}: writing {rows:,} ended leases under {PREFIX}")
        took = fill(db, rows, stale)
        log(f"{backend}: written in {took:.1f} s")
        store = tenure.open_store(db)
        try:
            svc = Service(store)
            svc.acquire("bob", PREFIX + "live/x", ttl_ms=600_000)
            for call in (subtree, plain):  # warm: prepared statements, caches
                for _ in range(5):
                    call(svc)
            got = {
                "subtree": times(lambda: subtree(svc), reps),
                "plain": times(lambda: plain(svc), reps),
                "plain beside subtree": beside(svc, reps),
            }
        finally:
            store.close()
    label = f"{backend}, stale statistics" if stale and backend == "postgres" else backend
    return [f"| {label} | {rows:,} | {name} | {summary(ms)} |" for name, ms in got.items()]


def describe() -> str:
    src = Path(tenure.__file__).resolve().parent.parent
    head = subprocess.run(
        ["git", "-C", str(src), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"tenure from {src} ({head or 'no git'})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="ended leases (1,000,000)")
    ap.add_argument("--reps", type=int, default=50, help="calls per timing (50)")
    ap.add_argument("--backend", default="sqlite,postgres", help="sqlite,postgres (both)")
    ap.add_argument(
        "--stale-stats",
        action="store_true",
        help="PostgreSQL: no ANALYZE after the fill, autovacuum off for the table",
    )
    args = ap.parse_args(argv)
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if not backends or set(backends) - {"sqlite", "postgres"}:
        ap.error("--backend takes sqlite, postgres or both (comma-separated)")
    if not 0 <= args.rows <= 50_000_000 or not 1 <= args.reps <= 10_000:
        ap.error("--rows between 0 and 50,000,000, --reps between 1 and 10,000")
    print(describe())
    lines = ["| backend | ended rows | acquisition | p50 ms | p95 ms |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="tenure-subtree-") as tmp:
        for backend in backends:
            work = Path(tmp) / backend
            work.mkdir()
            lines += run(backend, args.rows, args.reps, work, args.stale_stats)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
