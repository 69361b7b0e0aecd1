"""The reads that go along the lease table's indexes on PostgreSQL, with many rows: their plans.

A database (``--db``: the URL of an empty PostgreSQL database; tenure migrates it) is filled in
SQL: ``--leases`` lease rows of which ``--live`` are live (100 holders), ``--lapsed`` lapsed but
not recorded yet and the rest ended (released, expired, force-released; a tenth of them item
claims); with a ``due_at`` column, ``--stale`` live leases renewed since they were last due
(their due_at passed: the reaper moves it up). Then, after ``ANALYZE``: ``EXPLAIN (ANALYZE,
BUFFERS)`` of each read that a deadline index served or serves (the reaper's sweep, the earliest
deadline, a session's lapsed leases, compaction's idle leases, a holder's live leases counted
for its bound, listed, ended, the stats), each in a transaction rolled back. Printed per query:
its scans (node, index), the rows they visited, the shared buffers hit and read, and the
execution time; ``--plans`` prints the plans whole. Run it with the tenure of a branch before
and after a change of the indexes (``PYTHONPATH=/path/to/other/src``) for their plans side by
side. Nothing is asserted.

    python bench/lease_indexes.py --db postgresql://…/bench --leases 100000 --live 3000
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import psycopg

import tenure
from tenure.store.sqlfiles import queries

NOW = 1_800_000_000_000
FILL = """
INSERT INTO tenure_leases (key, token, holder, session, ttl_ms, acquired_at, renewed_at,
                           expires_at, ended)
SELECT CASE WHEN i %% 10 = 0 THEN 'items/' ELSE 'k/' END || lpad(i::text, 8, '0'), 1,
       'agent-' || (i %% 100), 's', 30000, %(now)s - 60000, %(now)s - 60000,
       CASE WHEN i <= %(live)s THEN %(now)s + 1000 + i %% 29000
            WHEN i <= %(live)s + %(lapsed)s THEN %(now)s - 500
            ELSE %(now)s - 600000 + i %% 500000 END,
       CASE WHEN i <= %(live)s + %(lapsed)s THEN NULL
            ELSE (ARRAY['released', 'expired', 'force_released'])[1 + i %% 3] END
FROM generate_series(1, %(n)s) AS i
"""
STALE = """
UPDATE tenure_leases SET due_at = %(now)s - 1000
WHERE key IN (SELECT key FROM tenure_leases WHERE ended IS NULL AND expires_at > %(now)s
              ORDER BY key LIMIT %(stale)s)
"""
PARAMS: dict[str, Any] = {
    "now": NOW,
    "limit": 1000,
    "holder": "agent-7",
    "session": "s",
    "since": NOW - 120_000,
    "before": NOW - 590_000,  # a mark past a few of the ended leases
    "prefix": "k/",
    "skip": [],
    "cap": 100,
    "over": 101,
    "task": None,
    "after": None,
    "state": "expired",
    "name": "agent-7",
}
READS = (
    "reap",
    "move_due",
    "next_deadline",
    "lapsed_leases",
    "idle_leases",
    "count_live_leases",
    "check_live_leases",
    "live_leases",
    "live_counts",
    "live_leases_of",
    "end_leases_of",
    "ended_leases",
)
SCAN = re.compile(r"(Seq Scan|Index Scan|Index Only Scan|Bitmap Index Scan|Bitmap Heap Scan)")


def fill(db: str, n: int, live: int, lapsed: int, stale: int) -> None:
    tenure.open_store(db).close()  # migrated
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(b"TRUNCATE tenure_leases")
        conn.execute(FILL.encode(), {"n": n, "live": live, "lapsed": lapsed, "now": NOW})
        has_due = conn.execute(
            b"SELECT 1 FROM information_schema.columns"
            b" WHERE table_name = 'tenure_leases' AND column_name = 'due_at'"
        ).fetchone()
        if has_due:  # renewed since they were last due: the reaper moves their due_at up
            conn.execute(STALE.encode(), {"stale": stale, "now": NOW})
        conn.execute(b"VACUUM ANALYZE tenure_leases")


def scans(node: dict[str, Any]) -> list[str]:
    """Each scan of the plan: node, index, rows produced and removed by its filter, loops."""
    out = []
    if SCAN.fullmatch(node["Node Type"]):
        name = node.get("Index Name") or node.get("Relation Name")
        removed = node.get("Rows Removed by Filter", 0)
        out.append(f"{node['Node Type']} {name}: rows {node['Actual Rows']} (-{removed} filtered)")
    for child in node.get("Plans", []):
        out.extend(scans(child))
    return out


def explain(db: str, name: str, sql: str, whole: bool) -> None:
    params = dict(PARAMS)
    if name in ("live_leases",):
        params.update(prefix=None, limit=50)
    with psycopg.connect(db) as conn:
        got = conn.execute(
            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}".encode(), params
        ).fetchone()
        conn.rollback()
    assert got is not None
    plan = got[0][0] if isinstance(got[0], list) else json.loads(got[0])[0]
    top = plan["Plan"]
    hit, read = top.get("Shared Hit Blocks", 0), top.get("Shared Read Blocks", 0)
    print(f"{name}: {plan['Execution Time']:.2f} ms, buffers hit {hit} read {read}")
    for line in scans(top):
        print(f"    {line}")
    if whole:
        print(json.dumps(top, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--leases", type=int, default=100_000)
    parser.add_argument("--live", type=int, default=3_000)
    parser.add_argument("--lapsed", type=int, default=50)
    parser.add_argument("--stale", type=int, default=100)
    parser.add_argument("--plans", action="store_true")
    args = parser.parse_args()
    fill(args.db, args.leases, args.live, args.lapsed, args.stale)
    q = queries("postgres")
    for name in READS:
        if name not in q:
            continue
        explain(args.db, name, q[name], args.plans)


if __name__ == "__main__":
    main()
