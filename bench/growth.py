"""How tenure's cost grows with its work: live leases, the event log, renew-all, history.

    python bench/growth.py                       # full sizes, both backends (~20 min on 2 cores)
    python bench/growth.py --quick               # small sizes: a smoke run (about a minute)
    python bench/growth.py --backend sqlite --only leases,events

Parts (``--only``, comma-separated; default all):

- ``leases``: one ``tenure serve`` on a fresh database; live leases of 1,000 other holders are
  added with one SQL statement per million rows (1k, 100k, 1M in all), and after each step the
  shared runner's ``cycle`` workload (16 clients, each acquire -> renew -> release on a key of
  its own, one service token, a session each) runs against the server over HTTP: ops/s,
  acquire p50/p99, the server's RSS;
- ``events``: the same with 0, 1M and 10M events in the log (the server's count retention
  raised above them for the run, so that it measures a log of that size, not its pruning);
- ``renew-all``: 100k and 1M leases of one session of the benchmark's principal (bulk SQL), then
  ONE ``POST /v1/leases/renew-all`` of that session: its time and the server's RSS and peak;
- ``compaction``: real calls in process (acquire, renew, release on a new key each time, a
  fenced write with an op_id in every fourth cycle), the database size before, the history
  made 100 days old (SQL), then compaction passes (``Service.compact``) until one deletes
  nothing: the time of a pass, the size after (and after ``VACUUM``), per million operations;
- ``servers``: bench/servers.py (1, 2 and 3 ``tenure serve`` on one PostgreSQL database).

Prints one table; writes the figures as JSON (``--json``, default
``bench/results/growth-<date>.json``) and the curves as an SVG image (``--svg``, default
``docs/img/growth.svg``). Servers bind 127.0.0.1 and are stopped by PID; every loop is bounded.
Nothing is asserted about speed. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import growth_db as gdb
import growth_plot
from growth_http import Server, bench_token, call, cycle_load, serve

import tenure
from tenure.core.compaction import Retention

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PARTS = ("leases", "events", "renew-all", "compaction", "servers")
FULL = {
    "leases": [1_000, 100_000, 1_000_000],
    "events": [0, 1_000_000, 10_000_000],
    "hold": [100_000, 1_000_000],
    "history": 200_000,
    "seconds": 5.0,
}
QUICK = {
    "leases": [1_000, 10_000],
    "events": [0, 100_000],
    "hold": [10_000],
    "history": 3_000,
    "seconds": 1.5,
}
CLIENTS = 16
#: the event count retention keeps, for the ``events`` part (above any size it writes)
EVENTS_MAX = str(10**9)


def log(msg: str) -> None:
    print(f"[growth] {msg}", file=sys.stderr, flush=True)


def load_bench(name: str) -> Any:
    """A sibling script (bench is not a package), e.g. cycle.py for its PostgreSQL helpers."""
    spec = importlib.util.spec_from_file_location(f"tenure_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# databases ------------------------------------------------------------------------------------
@contextlib.contextmanager
def databases(backend: str, tmp: Path, settings: str = "") -> Iterator[Callable[[str], str]]:
    """A maker of fresh databases of ``backend``: ``fresh(name)`` returns a URL. PostgreSQL
    runs with ``settings`` (``name=value;...``, set and the server restarted) if any."""
    if backend == "sqlite":
        yield lambda name: f"sqlite:///{tmp / name}.db"
        return
    cycle = load_bench("cycle")
    with contextlib.ExitStack() as stack:
        server, origin = stack.enter_context(cycle.postgres_server())
        log(f"postgres: {origin}")
        if settings:
            gdb.configure(server, settings)
            log(f"postgres: {settings}")
        yield lambda _name: str(stack.enter_context(cycle.postgres_database(server)))


def prepared(db: str) -> str:
    """Create tenure's schema and the benchmark's principal on ``db``; its token."""
    tenure.open_store(db).close()
    return bench_token(db)


# parts ----------------------------------------------------------------------------------------
def grow(
    backend: str, db: str, sizes: list[int], what: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Add rows up to each size, then measure the cycle against one server."""
    token = prepared(db)
    env = {"TENURE_EVENTS_MAX": EVENTS_MAX} if what == "events" else {}
    rows, have = [], 0
    with serve(db, env) as srv:
        for n in sizes:
            if n > have:
                add = gdb.add_leases if what == "leases" else gdb.add_events
                took = add(db, have, n - have)
                log(f"{backend}: {n:,} {what} ({n - have:,} added in {took:.1f} s)")
                have = n
            m = best_of(srv, token, f"{backend}-{what}-{n}", args)
            row = {"backend": backend, "part": what, "size": n, **m, **srv.memory_mb()}
            rows.append(row | {"db": gdb.size(db)})
            log(f"{backend}: {what}={n:,}: {fmt_cycle(rows[-1])}")
    rows[-1]["idle_pass_s"] = idle_pass(db)
    return rows


def idle_pass(db: str) -> float:
    """The seconds of one compaction pass over the whole database when nothing is due (what
    the server's schedule adds, once a minute by default)."""
    store = tenure.open_store(db)
    try:
        began = time.perf_counter()
        tenure.Service(store, retention=Retention(events_max=int(EVENTS_MAX))).compact()
        return time.perf_counter() - began
    finally:
        store.close()


def best_of(srv: Server, token: str, label: str, args: argparse.Namespace) -> dict[str, Any]:
    """``--repeat`` cycle runs back to back: the one with the most ops/s (other work on a
    shared machine only ever slows a run), with every run's ops/s beside it."""
    runs = [
        cycle_load([srv], token, CLIENTS, args.seconds, args.raw, f"{label}-{i}")
        for i in range(args.repeat)
    ]
    good = [r for r in runs if "error" not in r] or runs
    best = max(good, key=lambda r: r.get("ops_per_s", 0))
    return best | {"runs_ops_per_s": [r.get("ops_per_s") for r in runs]}


def renew_all(backend: str, db: str, sizes: list[int]) -> list[dict[str, Any]]:
    """ONE renew-all of a session holding ``n`` leases, for each ``n``."""
    token = prepared(db)
    rows = []
    with serve(db) as srv:
        for n in sizes:
            session = f"hold-{n}"
            gdb.add_leases(
                db, 0, n, prefix=f"hold/{n}/", holder="bench", session=session, ttl_ms=600_000
            )
            began = time.perf_counter()
            status, body = call(srv.url, token, "/v1/leases/renew-all", {"session": session})
            took = time.perf_counter() - began
            renewed = len(json.loads(body).get("renewed", ())) if status == 200 else 0
            row = {"backend": backend, "part": "renew-all", "size": n, "status": status}
            row |= {"seconds": took, "renewed": renewed, "reply_mb": len(body) / 2**20}
            rows.append(row | srv.memory_mb())
            log(
                f"{backend}: renew-all of {n:,}: {took:.2f} s, status {status}, {renewed:,} renewed"
            )
    return rows


def history(service: tenure.Service, target_ops: int, threads: int = 4) -> tuple[int, float]:
    """Real calls until ``target_ops``: acquire, renew, release of a new key each cycle, and a
    fenced write with an op_id in every fourth. The calls made and the seconds taken."""
    counter = iter(range(10**9))
    lock = threading.Lock()
    done = [0]

    def work() -> None:
        while True:
            with lock:
                if done[0] >= target_ops:
                    return
                i = next(counter)
                done[0] += 4 if i % 4 == 0 else 3
            key = f"hist/{i:08d}"
            lease = service.acquire("bench", key, ttl_ms=60_000)
            if i % 4 == 0:
                service.write("bench", key, lease.token, {"n": i}, op_id=f"op-{i}")
            service.renew("bench", key, lease.token)
            service.release("bench", key, lease.token)

    began = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return done[0], time.perf_counter() - began


def compact_all(service: tenure.Service, max_passes: int = 1000) -> list[dict[str, Any]]:
    """Compaction passes (``Service.compact``, its defaults) until one reports that nothing
    due was left behind; each pass's result and seconds."""
    passes: list[dict[str, Any]] = []
    compact = getattr(service, "compact", None)
    if compact is None:
        return passes
    for _ in range(max_passes):
        began = time.perf_counter()
        result = compact().to_dict()
        passes.append({"seconds": time.perf_counter() - began, **result})
        if result.get("complete", True):
            break
    return passes


def compaction(backend: str, db: str, ops: int) -> dict[str, Any]:
    prepared(db)
    empty = gdb.size(db)
    store = tenure.open_store(db)
    try:
        service = tenure.Service(store)
        made, took = history(service, ops)
        log(f"{backend}: history of {made:,} calls in {took:.1f} s")
        before = gdb.size(db)
        gdb.age(db, 100, "hist/")  # past every retention (the audit window: 90 days)
        passes = compact_all(service)
    finally:
        store.close()
    row: dict[str, Any] = {"backend": backend, "part": "compaction", "ops": made}
    row |= {"history_s": took, "empty": empty, "before": before}
    if not passes:
        return row | {"error": "Service.compact is not in this tree"}
    row["after"] = gdb.size(db)
    row["vacuum_s"] = gdb.vacuum(db)
    row["after_vacuum"] = gdb.size(db)
    row["passes"] = len(passes)
    row["pass_s"] = [p["seconds"] for p in passes]
    row["first_pass"] = passes[0]
    grown = before["bytes"] - empty["bytes"]
    row["mb_per_million_ops"] = grown / made * 1e6 / 2**20
    kept = row["after_vacuum"]["bytes"] - empty["bytes"]
    row["after_mb_per_million_ops"] = kept / made * 1e6 / 2**20
    log(f"{backend}: compaction: {fmt_compaction(row)}")
    return row


# output ---------------------------------------------------------------------------------------
def fmt_cycle(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"error: {r['error'][:200]}"
    return (
        f"{r['ops_per_s']:,.0f} ops/s, acquire p50/p99 {r['acquire_p50_ms']:.2f}/"
        f"{r['acquire_p99_ms']:.2f} ms, RSS {r.get('rss_mb', 0):.0f} MB"
    )


def fmt_compaction(r: dict[str, Any]) -> str:
    if "error" in r:
        return r["error"]
    mb = 2**20
    return (
        f"{r['before']['bytes'] / mb:.1f} MB -> {r['after_vacuum']['bytes'] / mb:.1f} MB "
        f"(empty {r['empty']['bytes'] / mb:.1f}); {r['mb_per_million_ops']:.0f} MB per million "
        f"calls before, {r['after_mb_per_million_ops']:.1f} after; {r['passes']} passes, "
        f"first {r['pass_s'][0]:.2f} s, all {sum(r['pass_s']):.2f} s"
    )


def ratio(rows: list[dict[str, Any]], r: dict[str, Any], key: str) -> str:
    base = next((b for b in rows if b["backend"] == r["backend"] and b["part"] == r["part"]), r)
    if not base.get(key) or not r.get(key):
        return ""
    return f"{r[key] / base[key]:.2f}"


def table(results: dict[str, Any]) -> str:
    head = (
        "| backend | part | size | ops/s | vs first | acquire p50 / p99 ms | p99 vs first "
        "| RSS MB | database MB |"
    )
    lines = [head, "|" + "---|" * 9]
    cyc = [r for r in results["rows"] if r["part"] in ("leases", "events")]
    for r in cyc:
        what = "live leases" if r["part"] == "leases" else "events"
        if "error" in r:
            lines.append(f"| {r['backend']} | {what} | {r['size']:,} | error | | | | | |")
            continue
        lines.append(
            f"| {r['backend']} | {what} | {r['size']:,} | {r['ops_per_s']:,.0f} "
            f"| {ratio(cyc, r, 'ops_per_s')} | {r['acquire_p50_ms']:.2f} / "
            f"{r['acquire_p99_ms']:.2f} | {ratio(cyc, r, 'acquire_p99_ms')} "
            f"| {r.get('rss_mb', 0):.0f} | {r['db']['bytes'] / 2**20:,.0f} |"
        )
    for r in results["rows"]:
        if r["part"] == "renew-all":
            lines.append(
                f"| {r['backend']} | renew-all (one call) | {r['size']:,} | {r['seconds']:.2f} s "
                f"| {r['renewed']:,} renewed | reply {r['reply_mb']:.0f} MB | peak RSS "
                f"{r.get('hwm_mb', 0):.0f} MB | {r.get('rss_mb', 0):.0f} | |"
            )
    for r in cyc:
        if "idle_pass_s" in r:
            what = "live leases" if r["part"] == "leases" else "events"
            lines.append(
                f"| {r['backend']} | compaction pass, nothing due | {r['size']:,} {what} "
                f"| {r['idle_pass_s']:.3f} s | | | | | |"
            )
    for r in results["compaction"]:
        lines.append(
            f"| {r['backend']} | compaction | {r['ops']:,} calls | | | {fmt_compaction(r)} | | | |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--backend", default="sqlite,postgres", help="sqlite, postgres or both")
    ap.add_argument("--only", default=",".join(PARTS), help=f"parts of: {' '.join(PARTS)}")
    ap.add_argument("--seconds", type=float, help="per cycle run (5; --quick 1.5)")
    ap.add_argument("--repeat", type=int, help="cycle runs per point, the best kept (2; quick 1)")
    ap.add_argument("--history", type=int, help="calls made for compaction (200000; quick 3000)")
    for part, key in (("leases", "leases"), ("events", "events"), ("renew-all", "hold")):
        ap.add_argument(
            f"--{key}",
            type=lambda text: [int(n) for n in text.split(",")],
            help=f"sizes of the {part} part, comma-separated ({FULL[key]}; quick {QUICK[key]})",
        )
    ap.add_argument(
        "--pg-settings",
        default="",
        help="PostgreSQL server settings for the run, 'name=value;...' (default: its own)",
    )
    ap.add_argument("--json", type=Path, help="figures (bench/results/growth-<date>.json)")
    ap.add_argument("--svg", type=Path, help="the curves (docs/img/growth.svg)")
    args = ap.parse_args(argv)
    sizes = dict(QUICK if args.quick else FULL)
    for key in ("leases", "events", "hold"):
        sizes[key] = getattr(args, key) or sizes[key]
    args.seconds = args.seconds or sizes["seconds"]
    args.repeat = args.repeat or (1 if args.quick else 2)
    backends = [b for b in args.backend.split(",") if b]
    parts = [p for p in args.only.split(",") if p]
    if set(backends) - {"sqlite", "postgres"} or set(parts) - set(PARTS):
        ap.error(f"--backend: sqlite,postgres; --only: {','.join(PARTS)}")
    stamp = time.strftime("%Y%m%d", time.gmtime())
    if args.json is None:
        args.json = ROOT / "bench" / "results" / f"growth-{stamp}.json"
    if args.svg is None:
        args.svg = ROOT / "docs" / "img" / "growth.svg"
    results = run(args, sizes, backends, parts)
    print(table(results))
    if results.get("servers"):
        print()
        print(load_bench("servers").table(results["servers"]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(growth_plot.svg(results))
    print(f"\nfigures: {args.json}\ncurves: {args.svg}")
    bad = [r for r in results["rows"] if "error" in r]
    return 1 if bad else 0


def run(
    args: argparse.Namespace, sizes: dict[str, Any], backends: list[str], parts: list[str]
) -> dict[str, Any]:
    load = os.getloadavg()
    results: dict[str, Any] = {
        "tenure": tenure.__version__,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "loadavg_before": load,
        "quick": args.quick,
        "seconds": args.seconds,
        "repeat": args.repeat,
        "clients": CLIENTS,
        "pg_settings": args.pg_settings,
        "rows": [],
        "compaction": [],
        "servers": {},
    }
    with tempfile.TemporaryDirectory(prefix="tenure-growth-") as tmp:
        args.raw = Path(tmp) / "loadgen.jsonl"
        for backend in backends:
            with databases(backend, Path(tmp), args.pg_settings) as fresh:
                for what in ("leases", "events"):
                    if what in parts:
                        results["rows"] += grow(backend, fresh(what), sizes[what], what, args)
                if "renew-all" in parts:
                    results["rows"] += renew_all(backend, fresh("hold"), sizes["hold"])
                if "compaction" in parts:
                    ops = args.history or sizes["history"]
                    results["compaction"].append(compaction(backend, fresh("history"), ops))
                if "servers" in parts and backend == "postgres":
                    servers = load_bench("servers")
                    trials = 5 if args.quick else 20
                    results["servers"] = servers.run(
                        fresh("servers"), args.seconds, args.raw, trials=trials
                    )
    results["loadavg_after"] = os.getloadavg()
    return results


if __name__ == "__main__":
    sys.exit(main())
