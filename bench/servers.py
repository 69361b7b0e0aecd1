"""The cycle with 1, 2 and 3 ``tenure serve`` on one PostgreSQL database, and the wake-up lag
of a waiter on one server for a key released through another.

    python bench/servers.py                  # a throw-away embedded PostgreSQL, 5 s per count
    python bench/servers.py --seconds 2 --trials 10

For each count: that many servers on the one database (each its own process and connection
pool), the shared runner's ``cycle`` workload with 16 clients split over them (one load
process per server, all at once): ops/s summed, acquire p99 (the worst server's), each
server's CPU and the database's (the PostgreSQL processes' CPU seconds over the run, per
second of it). Then ``--trials`` wake-ups: a holder acquires a key through the first server,
a waiter asks for it with ``wait_ms`` through the last one (the same server when there is one),
the holder releases; lag = the waiter's grant minus the release's reply (both seen by this
process). Nothing is asserted about speed. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from growth_http import Server, bench_token, call, cycle_load, serve

import tenure

CLIENTS = 16


def pctl(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * len(s)) - 1))] if s else float("nan")


def postgres_processes(db: str) -> list[psutil.Process]:
    """The server's processes (the postmaster and its children), found from a backend's PID."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        main = psutil.Process(int(row[0])).parent()  # (while the backend is there)
    return [main, *main.children(recursive=True)] if main else []


def commits(db: str) -> int:
    """Transactions committed in the database so far (``pg_stat_database``)."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        sql = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0


def cpu_s(procs: list[psutil.Process]) -> dict[int, float]:
    """CPU seconds so far of each process (by PID)."""
    out = {}
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            out[proc.pid] = times.user + times.system
    return out


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings (a process born in between: all of its own)."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def wake_lag(holder: Server, waiter: Server, token: str, trials: int) -> dict[str, Any]:
    """``trials`` hand-overs of one key from a session on ``holder`` to one on ``waiter``."""
    key = f"lag/{time.time_ns()}"
    lags: list[float] = []
    errors: list[str] = []
    for j in range(trials):
        st, body = call(holder.url, token, "/v1/leases/acquire", {"key": key, "session": "a"})
        if st != 200:
            errors.append(f"holder {st} {body[:200]!r}")
            continue
        held = json.loads(body)["lease"]["token"]
        got: list[tuple[int, float]] = []

        def wait(out: list[tuple[int, float]] = got) -> None:
            ask = {"key": key, "session": "b", "wait_ms": 10_000}
            status, reply = call(waiter.url, token, "/v1/leases/acquire", ask)
            out.append((status, time.perf_counter()))
            if status == 200:
                mine = json.loads(reply)["lease"]["token"]
                call(waiter.url, token, "/v1/leases/release", {"key": key, "token": mine})

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.2 + 0.01 * (j % 5))  # the waiter is parked on its server by then
        st, body = call(holder.url, token, "/v1/leases/release", {"key": key, "token": held})
        released = time.perf_counter()
        thread.join(30)
        if st != 200 or not got or got[0][0] != 200:
            errors.append(f"release {st}, waiter {got[:1]}")
            continue
        lags.append((got[0][1] - released) * 1000)
    return {
        "trials": trials,
        "lag_p50_ms": pctl(lags, 0.5),
        "lag_p99_ms": pctl(lags, 0.99),
        "lag_max_ms": max(lags, default=float("nan")),
        "lag_errors": errors[:3],
    }


def one_count(db: str, token: str, n: int, seconds: float, raw: Path, trials: int) -> dict:
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(serve(db)) for _ in range(n)]
        pg = postgres_processes(db)
        cpu0 = [s.cpu_s() for s in servers]
        db0, began, commits0 = cpu_s(pg), time.perf_counter(), commits(db)
        m = cycle_load(servers, token, CLIENTS, seconds, raw, f"servers-{n}")
        wall = time.perf_counter() - began
        m["commits_per_s"] = (commits(db) - commits0) / wall
        m["server_cpu_s_per_s"] = [
            (s.cpu_s() - c) / wall for s, c in zip(servers, cpu0, strict=True)
        ]
        m["db_cpu_s_per_s"] = cpu_between(db0, cpu_s(postgres_processes(db))) / wall
        m |= wake_lag(servers[0], servers[-1], token, trials)
    return {"servers": n, **m}


def run(db: str, seconds: float, raw: Path, counts: tuple[int, ...] = (1, 2, 3), trials: int = 20):
    tenure.open_store(db).close()
    token = bench_token(db)
    rows = []
    for n in counts:
        rows.append(one_count(db, token, n, seconds, raw, trials))
        print(f"[servers] {n}: {summary(rows[-1])}", file=sys.stderr, flush=True)
    return {"rows": rows, "clients": CLIENTS, "seconds": seconds}


def summary(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"error: {r['error'][:300]}"
    return (
        f"{r['ops_per_s']:,.0f} ops/s, acquire p99 {r['acquire_p99_ms']:.2f} ms, "
        f"wake-up lag p50/p99 {r['lag_p50_ms']:.1f}/{r['lag_p99_ms']:.1f} ms"
    )


def table(result: dict[str, Any]) -> str:
    head = (
        "| servers | ops/s | vs 1 | acquire p50 / p99 ms | CPU per server (s/s) "
        "| PostgreSQL CPU (s/s) | commits/s | wake-up lag p50 / p99 ms | errors |"
    )
    lines = [head, "|" + "---|" * 9]
    rows = result.get("rows", [])
    base = next((r.get("ops_per_s") for r in rows if "ops_per_s" in r), None)
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['servers']} | error: {r['error'][:80]} | | | | | | | |")
            continue
        vs = f"{r['ops_per_s'] / base:.2f}" if base else ""
        cpu = ", ".join(f"{c:.2f}" for c in r["server_cpu_s_per_s"])
        lines.append(
            f"| {r['servers']} | {r['ops_per_s']:,.0f} | {vs} | {r['acquire_p50_ms']:.2f} / "
            f"{r['acquire_p99_ms']:.2f} | {cpu} | {r['db_cpu_s_per_s']:.2f} "
            f"| {r.get('commits_per_s', 0):,.0f} "
            f"| {r['lag_p50_ms']:.1f} / {r['lag_p99_ms']:.1f} "
            f"| {r['errors'] + len(r['lag_errors'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import growth

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="per count (default 5)")
    ap.add_argument("--trials", type=int, default=20, help="wake-ups per count (default 20)")
    ap.add_argument("--counts", default="1,2,3", help="server counts (default 1,2,3)")
    args = ap.parse_args(argv)
    counts = tuple(int(c) for c in args.counts.split(","))
    with (
        tempfile.TemporaryDirectory(prefix="tenure-servers-") as tmp,
        growth.databases("postgres", Path(tmp)) as fresh,
    ):
        result = run(fresh("servers"), args.seconds, Path(tmp) / "raw.jsonl", counts, args.trials)
    print(table(result))
    return 1 if any("error" in r for r in result["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
