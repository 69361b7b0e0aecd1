"""How event ids are ordered on PostgreSQL, side by side: the cycle on 2-3 ``tenure serve`` on
one database with each way of handing out ids, and the time transactions wait on locks.

    python bench/event_order.py                         # 3 servers, 16 clients, 5 s, 2 rounds
    python bench/event_order.py --servers 2 --clients 48 --rounds 3

The ways (``--ways``), each a server whose two statements are swapped before it starts:

- ``lock``: as before: a global advisory lock taken before a transaction's events are
  inserted and held through its COMMIT, so ids follow commit order; readers read up to the
  newest id; the notices (``NOTIFY``) sent inside the transaction.
- ``announce-notify-inside``: ``announce`` (below) with the notices inside the transaction, as
  before: PostgreSQL's own NOTIFY lock (one for the whole cluster, taken at the COMMIT of every
  transaction that notifies and held through its flush) then orders the commits instead.
- ``announce``: what tenure does now: a transaction announces the newest id drawn so far as a
  shared advisory lock (no writer waits for another) and readers stop at the smallest one
  announced (``max_event_id``, which reads ``pg_locks``); the notices go after the COMMIT in a
  transaction of their own that does not wait for the disk.
- ``none``: ids with no ordering at all (readers may skip an event): the floor of any way
  without a lock in the commit path (per-server sequences merged at read time, or ids made of
  ``pg_current_xact_id()``, cost the writers this much at least).

Rounds alternate the ways. For each run: ops/s summed over the servers' load processes, acquire
p50/p99, and what the database's client backends were doing, sampled from
``pg_stat_activity`` every 5 ms over the load: the share of samples in which a backend waited
on a heavyweight lock (``pg_locks`` not granted, named: the event lock, an announcement, another
advisory lock (the bench's one principal's bound on live leases, counted under its lock at
a group's commit; a key prefix), NOTIFY's queue lock (PostgreSQL takes it at
the COMMIT of every transaction that notifies, for the whole cluster), a row or a transaction
id), and the average number of backends so waiting (= lock-wait seconds per second). Then the cost
of a reader's ``max_event_id`` with each way's statement (median of 200, in µs, during no
load). Nothing is asserted about speed. The figures are a small run on a shared machine.
"""

from __future__ import annotations

import runpy
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

WAYS = ("lock", "announce-notify-inside", "announce", "none")
LOCK = {
    "announce_events": "SELECT pg_advisory_xact_lock(7468, 1);",
    "max_event_id": "SELECT coalesce(max(id), 0) FROM tenure_events;",
}
NONE = {
    "announce_events": "SELECT 1;",
    "max_event_id": "SELECT coalesce(max(id), 0) FROM tenure_events;",
}
SWAPS: dict[str, dict[str, str]] = {
    "lock": LOCK,
    "announce-notify-inside": {},
    "announce": {},
    "none": NONE,
}
#: the ways whose notices go inside the transaction, before its COMMIT, as they did before
NOTIFY_INSIDE = ("lock", "announce-notify-inside")


def serve_as(way: str, argv: list[str]) -> None:
    """``tenure serve …`` with ``way``'s statements (before the store prepares them)."""
    from tenure.store.sqlfiles import queries

    queries("postgres").update(SWAPS[way])
    if way in NOTIFY_INSIDE:
        from tenure.store.postgres import tx

        queue = tx.Batch.queue_events

        def inside(self: Any, events: Any) -> None:
            queue(self, events)
            for payload in self.notices:  # in the transaction: NOTIFY's lock through COMMIT
                self.add("notify", {"payload": payload})
            self.notices = []

        tx.Batch.queue_events = inside  # type: ignore[method-assign]
    sys.argv = ["tenure", *argv]
    runpy.run_module("tenure.cli", run_name="__main__")


#: Each client backend of the database: its state and the lock it waits for (None: none), named.
SAMPLE = """
SELECT a.state, w.what
FROM pg_stat_activity a
LEFT JOIN LATERAL (
    SELECT CASE
        WHEN l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid = 7468 AND l.objid = 1
            THEN 'event lock'
        WHEN l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid >= 7470
            THEN 'announcement'
        WHEN l.locktype = 'advisory' AND l.objsubid = 1
             AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('bench', 7469)
            THEN 'the principal''s bound (lock_principal)'
        WHEN l.locktype = 'advisory' THEN 'advisory (a key prefix)'
        WHEN l.locktype = 'object' AND l.classid = 'pg_database'::regclass
            THEN 'NOTIFY queue (object)'
        ELSE l.locktype END AS what
    FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted LIMIT 1
) AS w ON true
WHERE a.datname = current_database() AND a.backend_type = 'client backend'
  AND a.pid <> pg_backend_pid()
"""


class Waits(threading.Thread):
    """Samples the database's client backends every 5 ms until stopped."""

    def __init__(self, db: str) -> None:
        super().__init__(daemon=True)
        self.db, self.stop = db, threading.Event()
        self.samples = 0
        self.lock_waits = 0  # backend-samples waiting on a heavyweight lock
        self.busy = 0  # backend-samples in a transaction (active or idle in transaction)
        self.kinds: dict[str, int] = {}

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.db, autocommit=True) as conn:
            while not self.stop.is_set():
                self.samples += 1
                for state, lock in conn.execute(SAMPLE).fetchall():
                    if state in ("active", "idle in transaction"):
                        self.busy += 1
                    if lock is not None:
                        self.lock_waits += 1
                        self.kinds[lock] = self.kinds.get(lock, 0) + 1
                time.sleep(0.005)

    def figures(self) -> dict[str, Any]:
        n = max(1, self.samples)
        return {
            "lock_waiting": self.lock_waits / n,  # backends waiting, on average
            "lock_share_of_busy": self.lock_waits / max(1, self.busy),
            "lock_kinds": dict(sorted(self.kinds.items())),
        }


def one_run(
    db: str, token: str, way: str, servers: int, clients: int, seconds: float, raw: Path
) -> dict[str, Any]:
    import sidebyside

    return sidebyside.loaded(__file__, db, token, way, servers, clients, seconds, raw, Waits(db))


def horizon_cost(db: str) -> dict[str, float]:
    """A reader's ``max_event_id`` with each way's statement: median µs of 200 (no load)."""
    import psycopg

    from tenure.store.sqlfiles import queries

    out = {}
    with psycopg.connect(db, autocommit=True) as conn:
        for way in ("lock", "announce"):  # (the other ways read as one of these)
            sql = SWAPS[way].get("max_event_id") or queries("postgres")["max_event_id"]
            times = []
            for _ in range(200):
                t = time.perf_counter()
                conn.execute(sql).fetchone()
                times.append((time.perf_counter() - t) * 1e6)
            out[way] = statistics.median(times)
    return out


def table(rows: list[dict[str, Any]], servers: int, clients: int) -> str:
    lines = [
        f"{servers} servers, {clients} clients",
        "| way | round | ops/s | acquire p50 / p99 ms | backends waiting on a lock (avg) "
        "| lock waits / busy backend-samples | lock kinds | errors |",
        "|" + "---|" * 8,
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['way']} | {r['round']} | error: {r['error'][:80]} |" + " |" * 5)
            continue
        kinds = ", ".join(f"{k} {v}" for k, v in r["lock_kinds"].items()) or "-"
        lines.append(
            f"| {r['way']} | {r['round']} | {r['ops_per_s']:,.0f} "
            f"| {r['acquire_p50_ms']:.2f} / {r['acquire_p99_ms']:.2f} "
            f"| {r['lock_waiting']:.3f} | {100 * r['lock_share_of_busy']:.1f} % | {kinds} "
            f"| {r['errors']} |"
        )
    for way in dict.fromkeys(r["way"] for r in rows):
        ops = [r["ops_per_s"] for r in rows if r["way"] == way and "error" not in r]
        waiting = [r["lock_waiting"] for r in rows if r["way"] == way and "error" not in r]
        if ops:
            lines.append(
                f"median {way}: {statistics.median(ops):,.0f} ops/s, "
                f"{statistics.median(waiting):.3f} backends waiting on a lock"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import sidebyside

    done = sidebyside.main(__doc__, WAYS, argv, serve_as, "order", one_run, after=horizon_cost)
    if done is None:  # a server launched
        return 0
    args, rows, cost = done
    print(table(rows, args.servers, args.clients))
    print(
        "a reader's max_event_id, median of 200 without load: "
        + ", ".join(f"{way} {us:.0f} µs" for way, us in cost.items())
    )
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
