"""The cycle with 1, 2 and 3 ``tenure serve`` on one PostgreSQL database, and the wake-up lag
of a waiter on one server for a key released through another.

    python bench/servers.py                  # a throw-away embedded PostgreSQL, 5 s per count
    python bench/servers.py --seconds 2 --trials 10
    python bench/servers.py --clients 16     # 16 clients only (default: 16, then 48)
    python bench/servers.py --json rows.json # the rows for bench/model.py too

For each client total (16 and 48 unless ``--clients``) and each count: that many servers on
the one database (each its own process and connection pool), the shared runner's ``cycle``
workload with the clients split over
them (one load process per server, all at once): ops/s summed, acquire p99 (the worst
server's), the calls per commit and commits a second (PostgreSQL's transaction ids handed out
over the load, per second of its window; those of NOTIFY transactions sent after a group's
commit, heard by listening, taken off), each server's CPU over the window (as its load
process measured it), the database's (the PostgreSQL processes' CPU seconds over the run, load
processes' start included, per second of it), the load processes' own CPU and the machine's
idle share over the window (``/proc/stat``, other work on the machine included), and the time
the database's backends spent waiting on a lock (``pg_stat_activity`` sampled every 10 ms over
the window: waiting backends on average, their share of the busy ones, the lock kinds: the
cross-server lock waits). Per client total: ops/s summed and its ratio to one server. Then
``--trials`` wake-ups: a holder acquires a key through the first server, a waiter asks for it
with ``wait_ms`` through the last one (the same server when there is one), the holder releases;
lag = the waiter's grant minus the release's reply (both seen by this process). Nothing is
asserted about speed. bench/servers_probe.py takes the same cycle apart (each group's round
trips, every process's CPU). At the end, bench/model.py's prediction of each row from the
per-call costs measured, beside the measured figure, and its figure for a 16-core database
host. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import model
import psutil
from growth_http import Server, bench_token, call, cycle_load, serve

import tenure

CLIENTS = 16
CLIENT_TOTALS = "16,48"
WAITS = """
SELECT wait_event_type, wait_event FROM pg_stat_activity
WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
"""


class LockWaits:
    """Samples ``pg_stat_activity`` every ``every`` s while running: how many of the database's
    backends are busy, and how many of them wait on a heavyweight lock (``wait_event_type =
    'Lock'``: a row's, a transaction id's, an advisory lock: the locks that make one server's
    group wait for another's). ``figures()``: backends waiting on a lock on average (s of
    waiting per s), their share of the busy backends, and the lock events seen most."""

    def __init__(self, db: str, every: float = 0.01) -> None:
        self.db, self.every = db, every
        self.samples = 0
        self.busy = 0
        self.notices = 0  # NOTIFY tenure deliveries heard (one a notifying transaction)
        self.waits: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LockWaits:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.db, autocommit=True) as conn:
            conn.add_notify_handler(self._heard)
            conn.execute("LISTEN tenure")
            while not self._stop.wait(self.every):
                got = conn.execute(WAITS.encode()).fetchall()
                self.samples += 1
                self.busy += len(got)
                for kind, event in got:
                    if kind == "Lock":
                        self.waits[event] = self.waits.get(event, 0) + 1

    def _heard(self, _notice: object) -> None:
        self.notices += 1

    def figures(self) -> dict[str, Any]:
        waiting = sum(self.waits.values())
        top = sorted(self.waits.items(), key=lambda kv: -kv[1])[:3]
        return {
            "lock_wait_s_per_s": waiting / max(1, self.samples),
            "lock_wait_share": waiting / max(1, self.busy),
            "lock_events": ", ".join(f"{k} {v / max(1, waiting):.0%}" for k, v in top) or "-",
        }


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


def next_xid(db: str) -> int:
    """The next transaction id PostgreSQL will hand out: writing transactions since a reading
    are the difference (exact at once, unlike ``pg_stat_database``, whose counts each backend
    sends in about once a second)."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()
    return int(row[0]) if row else 0


def load_figures(raw: Path, label: str) -> dict[str, float]:
    """From the load generators' own records: the load window (s, the longest), their CPU
    (s/s, summed) and the machine's idle share over the window (%, the first one's)."""
    recs = [json.loads(line) for line in raw.read_text().splitlines() if line.strip()]
    mine = [r["metrics"] for r in recs if r["label"].startswith(f"{label}#")]
    return {
        "window_s": max(m.get("window_s", 0.0) for m in mine),
        "load_cpu_s_per_s": sum(m.get("client_cpu_pct", 0.0) for m in mine) / 100,
        "idle_pct": 100 - (mine[0].get("host_busy_pct") or 100),
    }


def pg_cpu_total(db: str) -> float:
    """CPU seconds of the PostgreSQL server so far: the postmaster's own, its reaped children's
    (backends that ended: their connections closed) and its live children's. The difference of
    two readings is the server's CPU between them, whichever backends came and went."""
    procs = postgres_processes(db)
    if not procs:
        return 0.0
    main, total = procs[0], 0.0
    with contextlib.suppress(psutil.Error):
        t = main.cpu_times()
        total += t.children_user + t.children_system
    return total + sum(cpu_s(procs).values())


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


def one_count(
    db: str,
    token: str,
    n: int,
    seconds: float,
    raw: Path,
    trials: int,
    clients: int = CLIENTS,
    env: dict[str, str] | None = None,
    notify_apart: bool = True,
) -> dict:
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(serve(db, env)) for _ in range(n)]
        db0, began, xid0 = pg_cpu_total(db), time.perf_counter(), next_xid(db)
        label = f"servers-{n}-{clients}-{time.time_ns()}"
        with LockWaits(db) as waits:
            m = cycle_load(servers, token, clients, seconds, raw, label)
        wall = time.perf_counter() - began
        if "error" in m:
            return {"servers": n, "clients": clients, **m}
        m |= load_figures(raw, label) | waits.figures()
        commits = next_xid(db) - xid0  # the load's own, and its set-up's (a few dozen)
        if notify_apart:  # each group with events also spends a transaction id on its NOTIFY
            commits -= waits.notices
        m["commits_per_s"] = commits / m["window_s"]
        m["calls_per_commit"] = m["ops_per_s"] * m["window_s"] / max(1, commits)
        m["server_cpu_s_per_s"] = [  # over the load's window, as its load generator saw it
            (pct or 0.0) / 100 for pct in m["server_cpu_pct"]
        ]
        m["db_cpu_s_per_s"] = (pg_cpu_total(db) - db0) / wall
        m |= wake_lag(servers[0], servers[-1], token, trials)
    return {"servers": n, "clients": clients, **m}


def run(
    db: str,
    seconds: float,
    raw: Path,
    counts: tuple[int, ...] = (1, 2, 3),
    trials: int = 20,
    clients: tuple[int, ...] = (CLIENTS,),
):
    tenure.open_store(db).close()
    token = bench_token(db)
    rows = []
    for c in clients:
        for n in counts:
            rows.append(one_count(db, token, n, seconds, raw, trials, c))
            print(f"[servers] {n}, {c} clients: {summary(rows[-1])}", file=sys.stderr, flush=True)
    return {"rows": rows, "clients": clients[0], "seconds": seconds}


def notifies_apart(tree: Path) -> bool:
    """Whether ``tree``'s PostgreSQL groups send their NOTIFY in a transaction of their own
    after the COMMIT (a transaction id of its own, not a group's)."""
    tx = tree / "src/tenure/store/postgres/tx.py"
    return "synchronous_commit = off" in tx.read_text()


def tree_token(db: str, tree: Path) -> str:
    """The benchmark principal's token on ``db``, made (and the schema migrated) by the code
    of ``tree`` (a database migrated by newer code refuses older code)."""
    code = "import sys; from growth_http import bench_token; print(bench_token(sys.argv[1]))"
    env = dict(os.environ, PYTHONPATH=f"{tree / 'src'}{os.pathsep}{Path(__file__).parent}")
    out = subprocess.run(
        [sys.executable, "-c", code, db], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def run_variants(
    fresh: Any,
    variants: list[tuple[str, Path]],
    args: argparse.Namespace,
    raw: Path,
    counts: tuple[int, ...],
    clients: tuple[int, ...],
) -> dict[str, Any]:
    """Every variant (its own database, its servers running ``TREE/src``) for ``args.rounds``
    rounds, the variants' order and the counts' reversed every other round."""
    dbs = {name: fresh(f"servers_{name}") for name, _ in variants}
    tokens = {name: tree_token(dbs[name], tree) for name, tree in variants}
    rows = []
    for rnd in range(args.rounds):
        order = variants if rnd % 2 == 0 else variants[::-1]
        for name, tree in order:
            env = {"PYTHONPATH": str(tree / "src")}
            for c in clients:
                for n in counts if rnd % 2 == 0 else counts[::-1]:
                    db, token = dbs[name], tokens[name]
                    apart = notifies_apart(tree)
                    row = one_count(db, token, n, args.seconds, raw, args.trials, c, env, apart)
                    rows.append({**row, "variant": name, "round": rnd})
                    said = f"[servers] round {rnd + 1} {name}: {n}, {c} clients"
                    print(f"{said}: {summary(row)}", file=sys.stderr, flush=True)
    return {"rows": rows, "clients": clients[0], "seconds": args.seconds}


def medians(result: dict[str, Any]) -> str:
    """Per variant, client total and count: the median over the rounds of ops/s, of its ratio
    to one server in the same round, and of the lock waits; then each variant's ops/s beside
    the first variant's."""
    rows = [r for r in result["rows"] if "error" not in r]
    one = {
        (r["variant"], r["round"], r["clients"]): r["ops_per_s"] for r in rows if r["servers"] == 1
    }
    cells: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["variant"], r["clients"], r["servers"]), []).append(r)
    names = list(dict.fromkeys(r["variant"] for r in rows))
    lines = [
        "| variant | clients | servers | rounds | ops/s (median, range) "
        "| vs 1 server (median, range) | calls per commit | lock wait (s/s, share) | vs "
        + names[0]
        + " (median) |",
        "|" + "---|" * 9,
    ]
    for (name, c, n), got in sorted(
        cells.items(), key=lambda kv: (kv[0][1], kv[0][2], names.index(kv[0][0]))
    ):
        ops = [r["ops_per_s"] for r in got]
        vs1 = [
            r["ops_per_s"] / one[(name, r["round"], c)] for r in got if (name, r["round"], c) in one
        ]
        first = {r["round"]: r["ops_per_s"] for r in cells.get((names[0], c, n), [])}
        vs0 = [r["ops_per_s"] / first[r["round"]] for r in got if r["round"] in first]
        lines.append(
            f"| {name} | {c} | {n} | {len(got)} | {statistics.median(ops):,.0f} "
            f"({min(ops):,.0f}-{max(ops):,.0f}) | {spread(vs1)} "
            f"| {statistics.median(r.get('calls_per_commit', 0) for r in got):.1f} "
            f"| {statistics.median(r.get('lock_wait_s_per_s', 0) for r in got):.3f}, "
            f"{statistics.median(r.get('lock_wait_share', 0) for r in got):.0%} | {spread(vs0)} |"
        )
    return "\n".join(lines)


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def summary(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"error: {r['error'][:300]}"
    return (
        f"{r['ops_per_s']:,.0f} ops/s, acquire p99 {r['acquire_p99_ms']:.2f} ms, "
        f"wake-up lag p50/p99 {r['lag_p50_ms']:.1f}/{r['lag_p99_ms']:.1f} ms"
    )


def table(result: dict[str, Any]) -> str:
    head = (
        "| servers | clients | ops/s | vs 1 | acquire p50 / p99 ms | calls per commit "
        "| commits/s | CPU per server (s/s) | PostgreSQL CPU (s/s) | load CPU (s/s) "
        "| machine idle % | lock wait (s/s, share) | wake-up lag p50 / p99 ms | errors |"
    )
    lines = [head, "|" + "---|" * 14]
    rows = result.get("rows", [])
    base: dict[tuple[Any, ...], float] = {  # (variant, round, clients) -> one server's ops/s
        (r.get("variant"), r.get("round"), r["clients"]): r["ops_per_s"]
        for r in rows
        if r["servers"] == 1 and "error" not in r
    }
    for r in rows:
        clients = r.get("clients", result.get("clients", CLIENTS))
        if "error" in r:
            lines.append(f"| {r['servers']} | {clients} | error: {r['error'][:80]} |" + " |" * 11)
            continue
        first = base.setdefault((r.get("variant"), r.get("round"), clients), r["ops_per_s"])
        cpu = ", ".join(f"{c:.2f}" for c in r["server_cpu_s_per_s"])
        run = f"{r['variant']} {r['round'] + 1}: " if "variant" in r else ""
        lines.append(
            f"| {run}{r['servers']} | {clients} | {r['ops_per_s']:,.0f} "
            f"| {r['ops_per_s'] / first:.2f} "
            f"| {r['acquire_p50_ms']:.2f} / {r['acquire_p99_ms']:.2f} "
            f"| {r.get('calls_per_commit', 0):.1f} | {r.get('commits_per_s', 0):,.0f} | {cpu} "
            f"| {r['db_cpu_s_per_s']:.2f} | {r.get('load_cpu_s_per_s', 0):.2f} "
            f"| {r.get('idle_pct', 0):.0f} "
            f"| {r.get('lock_wait_s_per_s', 0):.2f}, {r.get('lock_wait_share', 0):.0%} "
            f"({r.get('lock_events', '-')}) | {r['lag_p50_ms']:.1f} / {r['lag_p99_ms']:.1f} "
            f"| {r['errors'] + len(r['lag_errors'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import growth

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="per count (default 5)")
    ap.add_argument("--trials", type=int, default=20, help="wake-ups per count (default 20)")
    ap.add_argument("--counts", default="1,2,3", help="server counts (default 1,2,3)")
    ap.add_argument("--clients", default=CLIENT_TOTALS, help=f"client totals ({CLIENT_TOTALS})")
    ap.add_argument("--json", type=Path, help="also write the rows there (for bench/model.py)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds, order reversed each other")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=TREE",
        help="servers running TREE/src, each on a database of its own (repeatable; the first "
        "is the base of the comparison); default: this tree",
    )
    args = ap.parse_args(argv)
    counts = tuple(int(c) for c in args.counts.split(","))
    clients = tuple(int(c) for c in args.clients.split(","))
    variants = [(v.split("=", 1)[0], Path(v.split("=", 1)[1]).resolve()) for v in args.variant]
    with (
        tempfile.TemporaryDirectory(prefix="tenure-servers-") as tmp,
        growth.databases("postgres", Path(tmp)) as fresh,
    ):
        raw = Path(tmp) / "raw.jsonl"
        if variants or args.rounds > 1:
            variants = variants or [("this", Path(__file__).resolve().parents[1])]
            result = run_variants(fresh, variants, args, raw, counts, clients)
        else:
            result = run(fresh("servers"), args.seconds, raw, counts, args.trials, clients)
    print(table(result))
    if "variant" in result["rows"][0]:
        print("\n" + medians(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    named = list(dict.fromkeys(r.get("variant", "") for r in result["rows"]))
    last = [r for r in result["rows"] if r.get("variant", "") == named[-1]]  # the newest tree
    print("\n" + model.report(last))
    return 1 if any("error" in r for r in result["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
