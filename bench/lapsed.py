"""What reporting a session's lapsed leases adds to a ``renew-all`` without keys.

A database (``--db``: a SQLite path URL or a PostgreSQL URL of an empty database) is filled as
growth.py fills it: ``--hold`` live leases of one session of the benchmark's principal, and
``--churn`` ended leases of 1,000 other holders with recent deadlines (released, expired,
force-released: what the look-up's range over recently ended leases walks through), plus
``--lapsed`` expired leases of the session itself. Then, alternating, ``--rounds`` times each:
the store's renewal alone (``Store.renew_all_json``, what the route called before) and the
service's (``Service.renew_all_json``: the renewal, then the look-up of the lapsed leases).
Printed: the seconds of each, and the look-up's plan.

    bench/lapsed.py --db postgresql://…/bench --hold 100000 --churn 100000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import time

import growth_db as gdb

import tenure
from tenure.store.sqlfiles import queries

HOLDER, SESSION = "bench", "s"
MINUTE = 60_000


def fill(db: str, hold: int, churn: int, lapsed: int) -> None:
    gdb.add_leases(db, 0, hold, prefix="held/", holder=HOLDER, session=SESSION)
    gdb.add_leases(db, 0, churn, prefix="churn/", ttl_ms=-MINUTE)  # deadlines a minute ago
    gdb.add_leases(db, 0, lapsed, prefix="lapsed/", holder=HOLDER, session=SESSION, ttl_ms=-1)
    with gdb.connect(db) as conn:
        kinds = "CASE WHEN right(key, 1) < '4' THEN 'released' ELSE 'expired' END"
        if not gdb.is_pg(db):
            kinds = kinds.replace("right(key, 1)", "substr(key, -1)")
        sql = f"UPDATE tenure_leases SET ended = {kinds} WHERE key >= 'churn/' AND key < 'churn0'"
        conn.execute(sql if not gdb.is_pg(db) else sql.encode())
        mark = (
            "UPDATE tenure_leases SET ended = 'expired' WHERE key >= 'lapsed/' AND key < 'lapsed0'"
        )
        conn.execute(mark if not gdb.is_pg(db) else mark.encode())
        if gdb.is_pg(db):
            conn.execute(b"VACUUM ANALYZE tenure_leases")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--hold", type=int, default=100_000)
    parser.add_argument("--churn", type=int, default=100_000)
    parser.add_argument("--lapsed", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    tenure.open_store(a.db).close()  # migrated
    fill(a.db, a.hold, a.churn, a.lapsed)
    store = tenure.open_store(a.db)
    service = tenure.Service(store)
    backend = "postgres" if gdb.is_pg(a.db) else "sqlite"
    times: dict[str, list[float]] = {"store": [], "service": [], "lookup": []}
    for _ in range(a.rounds):
        began = time.perf_counter()
        store.renew_all_json(HOLDER, SESSION)
        times["store"].append(time.perf_counter() - began)
        began = time.perf_counter()
        body = service.renew_all_json(HOLDER, SESSION)
        times["service"].append(time.perf_counter() - began)
        began = time.perf_counter()
        _, lost = store.lapsed(HOLDER, SESSION, 10 * MINUTE)
        times["lookup"].append(time.perf_counter() - began)
    reply = json.loads(body)
    assert len(reply["renewed"]) == a.hold and len(reply["lost"]) == a.lapsed == len(lost)
    now = gdb.now_ms()
    sql = queries(backend)["lapsed_leases"]
    params = {"holder": HOLDER, "session": SESSION, "now": now, "since": now - 10 * MINUTE}
    print(json.dumps({k: [round(x, 4) for x in v] for k, v in times.items()}))
    print(gdb.explain(a.db, sql, params))
    store.close()


if __name__ == "__main__":
    main()
