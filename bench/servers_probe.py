"""Where the time of several servers on one PostgreSQL goes: a measuring run of bench/servers.py's
cycle, A B A B, with the machine's idle time, each process's CPU and each server's group
transactions timed from inside (a launcher that wraps the executor's group and writes its
figures to a file).

    python bench/servers_probe.py --configs 1:16,3:16,1:48,3:48 --rounds 2 --seconds 5

A config is ``servers:clients[:option=value...]``; options: ``delay`` (PostgreSQL's
``commit_delay``, µs, with ``commit_siblings`` 1), ``wait`` (µs the group thread waits at
most for company, the executor's ``GATHER_S``; 0: it does not wait), ``nolisten=1`` (the
servers start without their LISTEN connection; a measurement only). The columns:
bench/results/2026-11-26-servers.md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import growth_http
import psutil
from growth_http import Server, bench_token, cycle_load
from servers import cpu_between, cpu_s, postgres_processes

import tenure


# the launcher ---------------------------------------------------------------------------------
def launch(stats: str, opts: str, argv: list[str]) -> int:
    """Run ``tenure`` with ``argv``, its group transactions timed into ``stats``."""
    from tenure.server.runtime import pg_executor as ex
    from tenure.store.postgres import connector as pgc
    from tenure.store.postgres import keylock, tx

    fig = {"groups": 0, "calls": 0, "busy_s": 0.0, "cpu_s": 0.0, "lock_s": 0.0, "commit_s": 0.0}
    run_group, lock_ahead, commit = (
        ex.PgGroupExecutor._run_group,
        keylock.lock_ahead,
        tx.Group.commit,
    )

    def timed_group(self: Any, jobs: list[Any], keys: list[str]) -> Any:
        t, c = time.perf_counter(), time.thread_time()
        out = run_group(self, jobs, keys)
        fig["busy_s"] += time.perf_counter() - t
        fig["cpu_s"] += time.thread_time() - c
        fig["groups"] += 1
        fig["calls"] += len(jobs)
        return out

    def timed(name: str, f: Any) -> Any:
        def wrapped(*a: Any) -> Any:
            t = time.perf_counter()
            try:
                return f(*a)
            finally:
                fig[name] += time.perf_counter() - t

        return wrapped

    ex.PgGroupExecutor._run_group = timed_group  # type: ignore[method-assign]
    keylock.lock_ahead = timed("lock_s", lock_ahead)
    tx.Group.commit = timed("commit_s", commit)  # type: ignore[method-assign]
    o = {k: int(v) for k, v in (x.split("=") for x in opts.split(",") if x)}
    if "wait" in o:  # the executor's wait for company (µs; 0: none)
        ex.GATHER_S = o["wait"] / 1e6
    if o.get("nolisten"):
        pgc.PostgresConnector.listen = lambda self, on_events, on_free: lambda: None  # type: ignore[method-assign,assignment]

    def dump() -> None:
        while True:
            Path(stats + ".tmp").write_text(json.dumps(fig))
            os.replace(stats + ".tmp", stats)
            time.sleep(0.1)

    threading.Thread(target=dump, daemon=True).start()
    from tenure.cli.app import main

    sys.argv = ["tenure", *argv]
    return int(main() or 0)


# the driver -----------------------------------------------------------------------------------
def serve(db: str, stats: Path, opts: str) -> contextlib.AbstractContextManager[Server]:
    """``tenure serve`` on ``db`` through this script's ``launch`` (timing its groups)."""
    return growth_http.serve(db, launcher=[sys.executable, __file__, "launch", str(stats), opts])


def proc_stat() -> list[int]:
    return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


def pg_settings(db: str, delay: int) -> None:
    import psycopg

    siblings = b"SET commit_siblings = 1" if delay else b"RESET commit_siblings"
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET commit_delay = {int(delay)}".encode())
        conn.execute(b"ALTER SYSTEM " + siblings)
        conn.execute(b"SELECT pg_reload_conf()")


class Sampler:
    """Every 0.1 s: the machine's CPU counters, the CPU seconds of the servers, PostgreSQL's
    processes and the load generators, and the servers' group figures."""

    def __init__(self, servers: list[Server], stats: list[Path], db: str) -> None:
        self.servers, self.stats, self.samples = servers, stats, []  # type: list[dict[str, Any]]
        self.pg_main = postgres_processes(db)[0]
        self.me = psutil.Process()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        spids = {s.pid for s in self.servers}
        while not self.stop.wait(0.1):
            pg = [self.pg_main, *self.pg_main.children(recursive=True)]
            mine = spids | {p.pid for p in pg}
            load = [p for p in self.me.children(recursive=True) if p.pid not in mine]
            self.samples.append(
                {
                    "t": time.monotonic(),
                    "stat": proc_stat(),
                    "servers": [s.cpu_s() for s in self.servers],
                    "pg": cpu_s(pg),
                    "load": cpu_s(load),
                    "groups": [json.loads(s.read_text()) for s in self.stats],
                }
            )

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


class Waits:
    """pg_stat_activity of the database's client backends, every 5 ms: what each was doing."""

    def __init__(self, db: str) -> None:
        self.db, self.counts = db, {}  # type: str, dict[str, int]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        import psycopg

        sql = (
            "SELECT state, coalesce(wait_event_type || ':' || wait_event, 'CPU'), left(query, 40)"
            " FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        with psycopg.connect(self.db, autocommit=True) as conn:
            while not self.stop.wait(0.005):
                for state, wait, query in conn.execute(sql.encode()).fetchall():
                    if state == "idle" and wait == "Client:ClientRead":
                        what = "idle (waiting for its server)"
                    else:
                        what = f"{state} {wait}"
                        if wait.startswith("Lock"):
                            what += f" [{query.split('(')[0]}]"
                    self.counts[what] = self.counts.get(what, 0) + 1

    def close(self) -> dict[str, int]:
        self.stop.set()
        self.thread.join()
        return self.counts


def window(samples: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first and last sample of the steady part: calls flowing, 0.5 s in from each end."""
    calls = [sum(g["calls"] for g in s["groups"]) for s in samples]
    busy = [i for i in range(1, len(samples)) if calls[i] - calls[i - 1] > 20]
    t0, t1 = samples[busy[0]]["t"] + 0.5, samples[busy[-1]]["t"] - 0.5
    inside = [s for s in samples if t0 <= s["t"] <= t1]
    return inside[0], inside[-1]


def one(db: str, token: str, cfg: str, seconds: float, tmp: Path) -> dict[str, Any]:
    n, clients, *opts = cfg.split(":")
    o = {k: int(v) for k, v in (x.split("=") for x in opts)}
    pg_settings(db, o.get("delay", 0))
    stats = [tmp / f"stats-{i}.json" for i in range(int(n))]
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(serve(db, s, ",".join(opts))) for s in stats]
        time.sleep(0.3)
        sampler = Sampler(servers, stats, db)
        waits = Waits(db) if o.get("waits") else None
        try:
            m = cycle_load(
                servers, token, int(clients), seconds, tmp / "raw.jsonl", f"{cfg}-{time.time()}"
            )
        finally:
            sampler.close()
            if waits is not None:
                got = waits.close()
                total = sum(got.values())
                top = sorted(got.items(), key=lambda kv: -kv[1])[:8]
                print(f"  {cfg} waits: " + "; ".join(f"{k} {100 * v / total:.0f}%" for k, v in top))
    a, b = window(sampler.samples)
    wall = b["t"] - a["t"]
    d = [y - x for x, y in zip(a["stat"], b["stat"], strict=False)]
    m["window_s"] = wall
    m["idle_pct"] = 100 * (d[3] + d[4]) / sum(d[:8])
    m["server_cpu"] = [(y - x) / wall for x, y in zip(a["servers"], b["servers"], strict=True)]
    m["db_cpu"] = cpu_between(a["pg"], b["pg"]) / wall
    m["load_cpu"] = cpu_between(a["load"], b["load"]) / wall
    grp = {
        k: sum(y[k] - x[k] for x, y in zip(a["groups"], b["groups"], strict=True))
        for k in a["groups"][0]
    }
    m["calls_per_s"] = grp["calls"] / wall
    m["commits_per_s"] = grp["groups"] / wall
    m["calls_per_group"] = grp["calls"] / max(1, grp["groups"])
    for k in ("busy_s", "cpu_s", "lock_s", "commit_s"):
        m[k.replace("_s", "_ms")] = 1000 * grp[k] / max(1, grp["groups"])
    m["thread_busy"] = grp["busy_s"] / wall / int(n)
    return {"cfg": cfg, **m}


def line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"| {r['cfg']} | error {r['error'][:100]} |"
    ours = sum(r["server_cpu"]) + r["db_cpu"] + r["load_cpu"]
    cells = [
        r["cfg"],
        f"{r['ops_per_s']:,.0f}",
        f"{r['acquire_p50_ms']:.2f} / {r['acquire_p99_ms']:.2f}",
        f"{r['idle_pct']:.0f}",
        f"{sum(r['server_cpu']):.2f}",
        f"{r['db_cpu']:.2f}",
        f"{r['load_cpu']:.2f}",
        f"{r['calls_per_s']:,.0f}",
        f"{r['commits_per_s']:,.0f}",
        f"{r['calls_per_group']:.1f}",
        f"{r['busy_ms']:.2f} ({r['lock_ms']:.2f} + {r['commit_ms']:.2f})",
        f"{r['cpu_ms']:.2f}",
        f"{r['thread_busy']:.2f}",
        f"{1e6 * ours / max(1.0, r['calls_per_s']):.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEAD = (
    "| servers:clients | ops/s | acquire p50 / p99 ms | idle % | servers CPU | PostgreSQL CPU "
    "| load CPU | calls/s | commits/s | calls a group | group ms (lock + commit round trips) "
    "| group thread CPU ms | group thread busy | CPU µs a call (ours) |\n" + "|---" * 14 + "|"
)


def main() -> int:
    if sys.argv[1] == "launch":
        return launch(sys.argv[2], sys.argv[3], sys.argv[4:])
    import growth

    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="1:16,3:16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="tenure-probe-") as tmp,
        growth.databases("postgres", Path(tmp)) as fresh,
    ):
        db = fresh("probe")
        tenure.open_store(db).close()
        token = bench_token(db)
        print(HEAD, flush=True)
        for _ in range(args.rounds):
            for cfg in args.configs.split(","):
                rows.append(one(db, token, cfg, args.seconds, Path(tmp)))
                print(line(rows[-1]), flush=True)
    print(json.dumps(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
