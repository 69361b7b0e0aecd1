"""PostgreSQL's cost per call: tenure (one ``tenure serve``) beside the plain row-lease, the
statements of each taken apart with ``pg_stat_statements``.

    python bench/pg_cost.py                     # 3 alternated rounds of 4 s, 16 clients
    python bench/pg_cost.py --rounds 5 --seconds 5 --explain

A throw-away embedded PostgreSQL with ``shared_preload_libraries=pg_stat_statements``; two
databases on it, one for the runner's row-lease (``loadgen.py --backend postgres --pg-mode
rowtoken``, each call one autocommit statement) and one for tenure. Each round runs the cycle of
both back to back (the order reversed every other round), with ``pg_stat_statements_reset()``
before each run. Printed: the rounds (ops/s, the ratio tenure / row-lease, PostgreSQL's CPU per
call: its processes' CPU seconds over the run divided by the calls, and the commits a second),
the medians, then the statements of the last run of each system: calls, calls per commit
(tenure: per group), total and mean time, rows, shared blocks hit / read / dirtied, and the
statement time per call (the execution time PostgreSQL itself counts, summed, per call served).
``--hot``: a third system, tenure on a database with only the lease table's two indexes on the
key (``tenure_leases_due``, ``_holder``, ``_idle``, ``_lapsed`` dropped, ``fillfactor`` 70):
the bound of what fewer index writes buy (an experiment; the sweeps need those indexes). Since
migration 0023 none of those holds a column a renewal changes: renewals are heap-only in both.
``--explain``: ``EXPLAIN (ANALYZE, BUFFERS)`` of a group's heavy statements (its lock, its
save, its events) for 16 keys of the run, in a transaction rolled back. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from growth_http import PEERS, PEERS_PY, bench_token, cycle_load, serve
from servers import next_xid, pg_cpu_total

import tenure

CLIENTS = 16
SETTINGS = "shared_preload_libraries=pg_stat_statements;pg_stat_statements.track=all"
STATS = """
SELECT regexp_replace(query, '\\s+', ' ', 'g'), calls, total_exec_time, mean_exec_time, rows,
       shared_blks_hit, shared_blks_read, shared_blks_dirtied, wal_bytes
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = current_database() AND calls > 0
ORDER BY total_exec_time DESC
"""


def reset(db: str) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(b"CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute(b"SELECT pg_stat_statements_reset()")
        conn.execute(b"SELECT pg_stat_reset()")


TABLES = """
SELECT t.relname, t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd,
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid)
FROM pg_stat_user_tables t WHERE t.n_tup_ins + t.n_tup_upd > 0 ORDER BY t.relname
"""


def tables(db: str) -> list[tuple[Any, ...]]:
    """Per table written: rows inserted, updated, of which HOT (no index touched), indexes."""
    time.sleep(1.2)  # the backends report their counts about once a second
    with psycopg.connect(db, autocommit=True) as conn:
        return conn.execute(TABLES.encode()).fetchall()


def statements(db: str) -> list[dict[str, Any]]:
    with psycopg.connect(db, autocommit=True) as conn:
        got = conn.execute(STATS.encode()).fetchall()
    keys = ("query", "calls", "total_ms", "mean_ms", "rows", "hit", "read", "dirtied", "wal")
    return [dict(zip(keys, row, strict=True)) for row in got]


def measured(db: str, go: Any) -> dict[str, Any]:
    """Run ``go()`` (it returns ops/s and the load's window) with PostgreSQL watched."""
    reset(db)
    cpu0, xid0, t0 = pg_cpu_total(db), next_xid(db), time.perf_counter()
    ops, window = go()
    wall = time.perf_counter() - t0
    cpu = pg_cpu_total(db) - cpu0
    commits = next_xid(db) - xid0
    calls = (ops or 0) * window
    return {
        "ops_per_s": ops,
        "pg_cpu_us_per_call": cpu / calls * 1e6 if calls else None,
        "pg_cpu_s_per_s": cpu / wall,
        "commits_per_s": commits / window if window else None,
        "calls": calls,
        "commits": commits,
        "statements": statements(db),
        "tables": tables(db),
    }


def rowlease(db: str, seconds: float, out: Path, label: str) -> tuple[float | None, float]:
    python = PEERS_PY if PEERS_PY.exists() else Path(sys.executable)
    cmd = [str(python), str(PEERS / "loadgen.py"), "run", "--backend", "postgres"]
    cmd += ["--pg-mode", "rowtoken", "--pg-dsn", db, "--workload", "cycle"]
    cmd += ["--clients", str(CLIENTS), "--duration", str(seconds), "--label", label]
    cmd += ["--out", str(out)]
    import subprocess

    subprocess.run(cmd, check=False, timeout=600, stdout=subprocess.DEVNULL)
    recs = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    got = [r["metrics"] for r in recs if r["label"] == label]
    if not got:
        return None, seconds
    return float(got[-1]["ops_per_s"]), float(got[-1].get("window_s") or seconds)


def tenure_run(db: str, token: str, seconds: float, out: Path, label: str) -> Any:
    with serve(db) as srv:
        m = cycle_load([srv], token, CLIENTS, seconds, out, label)
    if "error" in m:
        print(f"[pg_cost] tenure: {m['error'][:300]}", file=sys.stderr)
        return None, seconds
    recs = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    window = [r["metrics"].get("window_s", seconds) for r in recs if r["label"] == f"{label}#0"]
    return m["ops_per_s"], float(window[-1] if window else seconds)


DEADLINE_INDEXES = ("due", "holder", "idle", "lapsed")


def without_deadline_indexes(db: str) -> None:
    """The ``--hot`` experiment's schema: the key's two indexes only; room on each page."""
    with psycopg.connect(db, autocommit=True) as conn:
        for name in DEADLINE_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS tenure_leases_{name}".encode())
        conn.execute(b"ALTER TABLE tenure_leases SET (fillfactor = 70)")


def explain(db: str) -> str:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of a group's heavy statements, 16 keys of the run, rolled
    back."""
    from tenure.store.postgres.tx import Q, columns

    out = []
    with psycopg.connect(db) as conn:
        keys = [r[0] for r in conn.execute(b"SELECT key FROM tenure_leases LIMIT 16").fetchall()]
        rows = conn.execute(Q["lock_leases"].encode(), {"keys": keys}).fetchall()
        names = ("key", "token", "holder", "task", "ttl_ms", "acquired_at", "renewed_at")
        names += ("expires_at", "renewals", "meta", "ended", "fence_open", "conflicts")
        names += ("session", "scope")
        saves = columns([dict(zip(names, r, strict=True)) for r in rows])
        saves["meta"] = [json.dumps(m) if not isinstance(m, str) else m for m in saves["meta"]]
        now = int(time.time() * 1000)
        events = columns(
            [
                {
                    "at": now,
                    "type": "acquired",
                    "key": k,
                    "holder": "bench",
                    "task": "t",
                    "token": 1,
                    "actor": "bench",
                    "reason": None,
                    "data": "{}",
                }
                for k in keys
            ]
        )
        for name, params in (
            ("lock_leases", {"keys": keys}),
            ("save_leases", saves),
            ("insert_events", events),
        ):
            sql = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + Q[name]
            plan = conn.execute(sql.encode(), params).fetchall()
            out.append(f"### {name}\n\n```\n" + "\n".join(r[0] for r in plan) + "\n```")
        conn.rollback()
    return "\n\n".join(out)


def render_rounds(
    runs: list[dict[str, dict[str, Any]]], names: tuple[str, str] = ("row-lease", "tenure")
) -> str:
    """The rounds of two systems (keys ``rowlease`` and ``tenure``, shown as ``names``)."""
    a_, b_ = names
    head = f"| round | {a_} ops/s | {b_} ops/s | ratio | PG CPU µs/call {a_} | {b_} "
    head += f"| commits/s {a_} | {b_} |"
    out = [head, "|" + "---|" * 8]
    ratios = []
    for i, r in enumerate(runs):
        a, b = r["rowlease"], r["tenure"]
        ratio = b["ops_per_s"] / a["ops_per_s"] if a["ops_per_s"] and b["ops_per_s"] else None
        if ratio:
            ratios.append(ratio)
        out.append(
            f"| {i + 1} | {a['ops_per_s'] or 0:,.0f} | {b['ops_per_s'] or 0:,.0f} "
            f"| {ratio or 0:.2f}x | {a['pg_cpu_us_per_call'] or 0:.0f} "
            f"| {b['pg_cpu_us_per_call'] or 0:.0f} | {a['commits_per_s'] or 0:,.0f} "
            f"| {b['commits_per_s'] or 0:,.0f} |"
        )

    def med(system: str, what: str) -> float:
        got = [r[system][what] for r in runs if r[system][what]]
        return statistics.median(got) if got else 0.0

    spread = f" ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else ""
    out.append(
        f"| median | {med('rowlease', 'ops_per_s'):,.0f} | {med('tenure', 'ops_per_s'):,.0f} "
        f"| {statistics.median(ratios) if ratios else 0:.2f}x{spread} "
        f"| {med('rowlease', 'pg_cpu_us_per_call'):.0f} "
        f"| {med('tenure', 'pg_cpu_us_per_call'):.0f} "
        f"| {med('rowlease', 'commits_per_s'):,.0f} | {med('tenure', 'commits_per_s'):,.0f} |"
    )
    return "\n".join(out)


def render_statements(m: dict[str, Any], top: int = 14) -> str:
    calls, commits = max(1.0, m["calls"]), max(1, m["commits"])
    head = "| statement | calls | per commit | total ms | mean µs | rows | blks hit/read/dirtied "
    head += "| µs per call served |"
    out = [head, "|" + "---|" * 8]
    for s in m["statements"][:top]:
        q = s["query"][:90].replace("|", "\\|")
        out.append(
            f"| `{q}` | {s['calls']:,} | {s['calls'] / commits:.2f} | {s['total_ms']:,.0f} "
            f"| {s['mean_ms'] * 1000:.0f} | {s['rows']:,} "
            f"| {s['hit']:,}/{s['read']:,}/{s['dirtied']:,} "
            f"| {s['total_ms'] * 1000 / calls:.1f} |"
        )
    total = sum(s["total_ms"] for s in m["statements"])
    for name, ins, upd, hot, idx in m["tables"]:
        out.insert(0, f"- `{name}`: {ins:,} inserted, {upd:,} updated ({hot:,} HOT), {idx} indexes")
    out.insert(len(m["tables"]), "")
    out.append(
        f"| (all {len(m['statements'])}) | | | {total:,.0f} | | | | {total * 1000 / calls:.1f} |"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import growth

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    ap.add_argument("--seconds", type=float, default=4.0, help="per run (default 4)")
    ap.add_argument("--explain", action="store_true", help="EXPLAIN a group's statements")
    ap.add_argument("--hot", action="store_true", help="also tenure without the sweeps' indexes")
    args = ap.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="tenure-pgcost-") as tmp,
        growth.databases("postgres", Path(tmp), SETTINGS) as fresh,
    ):
        out = Path(tmp) / "raw.jsonl"
        out.touch()
        row_db, ten_db = fresh("rowlease"), fresh("tenure")
        tenure.open_store(ten_db).close()
        token = bench_token(ten_db)
        systems: dict[str, Any] = {
            "rowlease": lambda i: measured(
                row_db, lambda: rowlease(row_db, args.seconds, out, f"row-{i}")
            ),
            "tenure": lambda i: measured(
                ten_db, lambda: tenure_run(ten_db, token, args.seconds, out, f"ten-{i}")
            ),
        }
        if args.hot:
            hot_db = fresh("hot")
            tenure.open_store(hot_db).close()
            without_deadline_indexes(hot_db)
            hot_token = bench_token(hot_db)
            systems["tenure-hot"] = lambda i: measured(
                hot_db, lambda: tenure_run(hot_db, hot_token, args.seconds, out, f"hot-{i}")
            )
        runs: list[dict[str, dict[str, Any]]] = []
        for i in range(args.rounds):
            order = list(systems) if i % 2 == 0 else list(systems)[::-1]
            runs.append({name: systems[name](i) for name in order})
            r = runs[-1]
            print(
                f"[pg_cost] round {i + 1}: "
                + ", ".join(f"{name} {r[name]['ops_per_s']}" for name in systems),
                file=sys.stderr,
                flush=True,
            )
        plans = explain(ten_db) if args.explain else ""
    print(render_rounds(runs))
    if args.hot:
        print("\n## tenure without the sweeps' indexes (--hot) beside tenure\n")
        pairs = [{"rowlease": r["tenure"], "tenure": r["tenure-hot"]} for r in runs]
        print(render_rounds(pairs, ("tenure", "tenure-hot")))
    for name in systems:
        print(f"\n## Statements, {name} (the last round)\n")
        print(render_statements(runs[-1][name]))
    if plans:
        print("\n## A group's heavy statements (16 keys)\n\n" + plans)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
