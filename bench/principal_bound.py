"""The per-principal bound on live leases with 2-3 ``tenure serve`` on one PostgreSQL, side by
side: every client is the one principal ``bench`` (a service with many workers), so each group
of each server gives it new leases and checks its bound at the commit.

    python bench/principal_bound.py                        # 3 servers, 16 clients, 5 s, 2 rounds
    python bench/principal_bound.py --servers 2 --clients 48 --rounds 3

The ways (``--ways``), each a server whose statement ``lock_principal_slots`` is swapped before
it starts:

- ``exclusive``: as before: the principal's advisory lock taken whole at each group's commit and
  held through its COMMIT, so the groups of different servers for one principal commit one
  after another;
- ``row``: a row per principal updated at each group's commit instead (a row lock, held through
  the COMMIT: the counter-row design's wait, without its counting);
- ``slots``: what tenure does now: far from the bound a group holds one of the principal's slots
  for each new lease (try-locks) and the principal's lock shared, and counts with a margin of
  the slots; no group waits for another.

Rounds alternate the ways. For each run: ops/s summed over the servers' load processes, acquire
p50/p99, and the database's client backends waiting on a heavyweight lock (sampled from
``pg_stat_activity`` and ``pg_locks`` every 5 ms, named as bench/event_order.py names them: the
principal's bound is ``lock_principal``; a row lock shows as ``tuple`` or ``transactionid``).
Nothing is asserted about speed. The figures are a small run on a shared machine.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path
from typing import Any

from event_order import Waits, table

WAYS = ("exclusive", "row", "slots")
SWAPS: dict[str, dict[str, str]] = {
    "exclusive": {
        "lock_principal_slots": "SELECT set_config('tenure.bound_margin', '0', true)"
        " || pg_advisory_xact_lock(hashtextextended(%(principal)s, 7469))::text;"
    },
    "row": {
        "lock_principal_slots": "INSERT INTO bench_bound_rows AS r VALUES (%(principal)s, 1)"
        " ON CONFLICT (principal) DO UPDATE SET n = r.n + 1"
        " RETURNING set_config('tenure.bound_margin', '0', true);"
    },
    "slots": {},
}
ROWS = "CREATE TABLE IF NOT EXISTS bench_bound_rows (principal text PRIMARY KEY, n bigint)"


def serve_as(way: str, argv: list[str]) -> None:
    """``tenure serve …`` with ``way``'s statement (before the store prepares it)."""
    from tenure.store.sqlfiles import queries

    queries("postgres").update(SWAPS[way])
    sys.argv = ["tenure", *argv]
    runpy.run_module("tenure.cli", run_name="__main__")


STATS = """
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, xact_rollback, deadlocks
FROM pg_stat_database WHERE datname = current_database()
"""


def db_stats(db: str) -> tuple[int, ...]:
    """The next transaction id (the writing transactions since a reading are the difference:
    a group's and its notices' after it), the database's transactions rolled back and its
    deadlocks so far (each backend reports those as it ends: read once the servers stopped)."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute(STATS).fetchone()
    return tuple(int(v) for v in row) if row else (0, 0, 0)


def one_run(
    db: str, token: str, way: str, servers: int, clients: int, seconds: float, raw: Path
) -> dict[str, Any]:
    import sidebyside

    before = db_stats(db)
    m = sidebyside.loaded(__file__, db, token, way, servers, clients, seconds, raw, Waits(db))
    time.sleep(1)  # (the servers' backends report their counts as they end)
    xids, rollbacks, deadlocks = (b - a for a, b in zip(before, db_stats(db), strict=True))
    calls = m.get("ops_per_s", 0.0) * seconds  # (each acquire, renew, release a call)
    return {
        **m,
        "calls_per_xid": calls / max(1, xids),
        "rollbacks": rollbacks,
        "deadlocks": deadlocks,
    }


def add_rows(db: str) -> None:
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(ROWS)


def main(argv: list[str] | None = None) -> int:
    import sidebyside

    done = sidebyside.main(__doc__, WAYS, argv, serve_as, "bound", one_run, prepare=add_rows)
    if done is None:  # a server launched
        return 0
    args, rows, _ = done
    print(table(rows, args.servers, args.clients))
    for r in rows:
        if "error" not in r:
            print(
                f"{r['way']} round {r['round']}: about {r['calls_per_xid']:.1f} calls a "
                f"transaction id, {r['rollbacks']} rollbacks, {r['deadlocks']} deadlocks"
            )
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
