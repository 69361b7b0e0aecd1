"""Where the time of one PostgreSQL ``renew-all`` of a large session goes (a growth.py aside).

Each variant gets a fresh database on one embedded PostgreSQL, filled as growth.py's renew-all
part fills it (``--hold`` leases of one session, bulk SQL, then ``VACUUM ANALYZE``); then ONE
renewal in process (the store's ``renew_all_json``, what the route calls) or, with ``--http``,
ONE ``POST /v1/leases/renew-all`` to a ``tenure serve``. Printed per run: the seconds, the CPU
seconds of PostgreSQL's processes and of this one (in process), the WAL written, the
checkpoints that ran during the call and the buffers written by the backend itself. Variants
alternate (A B A B ...), the machine being noisy. ``--impl old,new`` alternates the renewal's
code too (in process only): ``old`` is the single statement it replaced (:data:`OLD_SQL`).

A variant is server settings, ``name=value`` separated by ``;`` (``-`` for none), set with
``ALTER SYSTEM`` and a restart of the server before its runs::

    bench/growth_renew.py --hold 1000000 --variant - --variant 'max_wal_size=4GB' --rounds 2

``--explain`` prints ``EXPLAIN (ANALYZE, BUFFERS, WAL)`` of the renewal's statements instead of
timing the store (the statements run, in a transaction rolled back, on a fresh fill).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import growth_db as gdb
from growth import load_bench, log, prepared
from growth_http import call, serve

import tenure
from tenure.store.postgres import renew_json
from tenure.store.postgres.renew_json import PART
from tenure.store.sqlfiles import queries

NEW = renew_json.renew_all_json
#: the renewal before it went part by part: one statement, two sorts of the whole session
OLD_SQL = """
WITH renewed AS (
    UPDATE tenure_leases
    SET renewed_at = %(now)s, renewals = renewals + 1,
        expires_at = greatest(expires_at, %(now)s + ttl_ms)
    WHERE key = ANY(%(locked)s::text[]) AND holder = %(holder)s AND ended IS NULL
      AND expires_at > %(now)s AND token > 0
    RETURNING key, holder, session, task, token, ttl_ms, acquired_at, renewed_at, expires_at,
              renewals, meta, scope
), ordered AS (
    SELECT row_number() OVER (ORDER BY key COLLATE "C") AS n,
           json_build_object(
               'key', key, 'holder', holder, 'session', session, 'task', task, 'token', token,
               'ttl_ms', ttl_ms,
               'acquired_at', acquired_at, 'renewed_at', renewed_at, 'expires_at', expires_at,
               'renewals', renewals, 'meta', meta::json, 'state', 'live', 'scope', scope
           )::text AS lease
    FROM renewed
), parted AS (
    SELECT (n - 1) / %(part)s AS part, n, lease FROM ordered
)
SELECT count(*), CASE WHEN part > 0 THEN ',' ELSE '' END || string_agg(lease, ',' ORDER BY n)
FROM parted
GROUP BY part
ORDER BY part
"""


def old(cur: Any, holder: str, session: str | None, now: Any) -> tuple[int, list[bytes], int]:
    """renew_json.renew_all_json as it was (one statement for the whole session)."""
    from psycopg.types.string import ByteaBinaryLoader

    params: dict[str, Any] = {"holder": holder, "session": session, "keys": None}
    locked = [row[0] for row in cur.execute(queries("postgres")["lock_holder_leases"], params)]
    instant = now()
    params.update(now=instant, locked=locked, part=PART)
    cur.adapters.register_loader("text", ByteaBinaryLoader)
    parts = list(cur.stream(OLD_SQL.encode(), params, binary=True))
    return instant, [p[1] for p in parts], sum(p[0] for p in parts)


STATS = (
    "SELECT c.num_timed, c.num_requested, c.buffers_written, b.buffers_clean, "
    "(SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE backend_type = 'client backend'), "
    "pg_current_wal_lsn() FROM pg_stat_checkpointer c, pg_stat_bgwriter b"
)


def stats(db: str) -> dict[str, Any]:
    with gdb.connect(db) as conn:
        row = conn.execute(STATS.encode()).fetchone()
        names = ("ckpt_timed", "ckpt_req", "buf_ckpt", "buf_clean", "buf_backend", "lsn")
        return dict(zip(names, row, strict=True))


def pg_cpu(db: str) -> float:
    """CPU seconds of the server's processes alive now (its backends, checkpointer, writers):
    a figure the other work on a shared machine moves less than wall time."""
    import os

    with gdb.connect(db) as conn:
        pgdata = conn.execute(b"SHOW data_directory").fetchone()[0]
    master = int((Path(pgdata) / "postmaster.pid").read_text().split()[0])
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if proc.name == str(master) or fields[1] == str(master):
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def delta(db: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    with gdb.connect(db) as conn:
        wal = conn.execute(
            b"SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", (after["lsn"], before["lsn"])
        ).fetchone()[0]
    out = {k: int(after[k] - before[k]) for k in before if k != "lsn"}
    return out | {"wal_mb": round(float(wal) / 2**20, 1)}


def fill(db: str, n: int) -> str:
    session = f"hold-{n}"
    prepared(db)
    took = gdb.add_leases(
        db, 0, n, prefix=f"hold/{n}/", holder="bench", session=session, ttl_ms=600_000
    )
    log(f"filled {n:,} in {took:.1f} s")
    return session


def once(db: str, session: str, http: bool, impl: str) -> dict[str, Any]:
    renew_json.renew_all_json = old if impl == "old" else NEW  # type: ignore[assignment]
    before = stats(db)
    if http:
        token = prepared(db)
        with serve(db) as srv:
            began = time.perf_counter()
            status, body = call(srv.url, token, "/v1/leases/renew-all", {"session": session})
            took = time.perf_counter() - began
            mem = srv.memory_mb()
        row: dict[str, Any] = {"seconds": round(took, 2), "status": status} | mem
        row["renewed"] = len(json.loads(body).get("renewed", ())) if status == 200 else 0
    else:
        store = tenure.open_store(db)
        try:
            cpu, py = pg_cpu(db), time.process_time()
            began = time.perf_counter()
            _, _parts, count = store.renew_all_json("bench", session)
            row = {"seconds": round(time.perf_counter() - began, 2), "renewed": count}
            row |= {"pg_cpu_s": round(pg_cpu(db) - cpu, 2)}
            row |= {"py_cpu_s": round(time.process_time() - py, 2)}
        finally:
            store.close()
    return row | delta(db, before, stats(db))


def explain(db: str, session: str, impl: str) -> None:
    """The two statements' plans; the new renewal's over the whole session at once."""
    q = queries("postgres")
    if impl == "old":
        q["renew_all_json"] = OLD_SQL
    with gdb.connect(db) as conn:
        conn.execute(b"BEGIN")
        params: dict[str, Any] = {"holder": "bench", "session": session, "keys": None}
        for name in ("lock_holder_leases", "renew_all_json"):
            if name == "renew_all_json":
                locked = [r[0] for r in conn.execute(q["lock_holder_leases"].encode(), params)]
                params |= {"now": gdb.now_ms(), "locked": locked, "part": PART}
            sql = f"EXPLAIN (ANALYZE, BUFFERS, WAL) {q[name]}"
            began = time.perf_counter()
            plan = conn.execute(sql.encode(), params).fetchall()
            print(f"-- {name}: {time.perf_counter() - began:.2f} s")
            print("\n".join(r[0][:300] for r in plan))
        conn.execute(b"ROLLBACK")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hold", type=int, default=1_000_000, help="leases of the session")
    ap.add_argument("--variant", action="append", help="settings 'a=1;b=2', '-' for none")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each variant, alternating")
    ap.add_argument("--http", action="store_true", help="through tenure serve, not in process")
    ap.add_argument("--explain", action="store_true", help="EXPLAIN the statements instead")
    ap.add_argument("--impl", default="new", help="old,new: the renewal's code, alternating")
    args = ap.parse_args(argv)
    variants = args.variant or ["-"]
    cycle = load_bench("cycle")
    rows = []
    with cycle.postgres_server() as (server, _origin):
        for r in range(args.rounds):
            for v, impl in [(v, i) for v in variants for i in args.impl.split(",")]:
                gdb.configure(server, v)
                with cycle.postgres_database(server) as db:
                    session = fill(db, args.hold)
                    if args.explain:
                        print(f"== variant {v}, {impl}")
                        explain(db, session, impl)
                        continue
                    row = {"variant": v, "impl": impl, "round": r, "hold": args.hold}
                    row |= once(db, session, args.http, impl)
                    rows.append(row)
                    log(json.dumps(row))
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
