"""Filtered reads of a large event log: the full scans of before, the bounded reads of now.

Fills a fresh database with ``--events`` events (1,000,000 by default: 200 holders, mostly
``acquired``/``released``, one ``force_released`` in a thousand), then times, per filter:

- **before**: the listing as it was (``id > after`` and every filter as ``(:x IS NULL OR x = :x)``,
  which no index serves): a follower whose filter matches nothing walks the whole log on every
  read, and its cursor stays where it was, so the next bell walks it again;
- **after**: one read as the server now does it (``tenure.server.runtime.feed.read_page``): along
the
  (holder, id) or (type, id) index, bounded to ``--scan`` ids, returning the cursor past them;
  and the number of reads a follower starting at 0 needs to reach the end of the log.

It also times appending events with and without the two indexes (their cost on every commit).
Prints figures; asserts nothing about speed.

    .venv/bin/python bench/events_scan.py                       # SQLite, 1M events
    .venv/bin/python bench/events_scan.py --events 200000
    .venv/bin/python bench/events_scan.py --db postgresql://…   # a fresh PostgreSQL database
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tenure
from tenure.server.runtime.feed import Filters, read_page
from tenure.service.leases import Service

HOLDERS = 200
OLD_QUERY = """
SELECT id, at, type, key, holder, task, token, actor, reason, data
FROM tenure_events
WHERE id > :after
  AND (:key IS NULL OR key = :key)
  AND (:holder IS NULL OR holder = :holder)
  AND (:type IS NULL OR type = :type)
ORDER BY id
LIMIT :limit
"""
OLD_QUERY_PG = (
    OLD_QUERY.replace(":after", "%(after)s")
    .replace(":limit", "%(limit)s")
    .replace(":key", "%(key)s::text")
    .replace(":holder", "%(holder)s::text")
    .replace(":type", "%(type)s::text")
)


def rows(n: int, start: int = 0) -> Iterator[tuple[Any, ...]]:
    for i in range(start, start + n):
        kind = "force_released" if i % 1000 == 999 else ("acquired", "released")[i % 2]
        holder = f"agent-{i % HOLDERS}"
        yield (1_700_000_000_000 + i, kind, f"k/{i % 5000}", holder, None, i, holder, None, "{}")


INSERT_SQLITE = (
    "INSERT INTO tenure_events (at, type, key, holder, task, token, actor, reason, data) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class Db:
    """The raw connection of the benchmark's database, whichever backend."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.pg = url.startswith("postgres")
        if self.pg:
            import psycopg

            self.conn: Any = psycopg.connect(url, autocommit=True)
        else:
            import sqlite3

            self.conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)

    def fill(self, n: int, start: int = 0, batch: int = 10_000) -> None:
        sql = INSERT_SQLITE.replace("?", "%s") if self.pg else INSERT_SQLITE
        done = 0
        while done < n:
            chunk = list(rows(min(batch, n - done), start + done))
            if self.pg:
                with self.conn.transaction(), self.conn.cursor() as cur:
                    cur.executemany(sql, chunk)
            else:
                with _SqliteTx(self.conn) as conn:
                    conn.executemany(sql, chunk)
            done += len(chunk)

    def run(self, sql: str, params: dict[str, Any]) -> list[Any]:
        return list(self.conn.execute(sql, params).fetchall())

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)


class _SqliteTx:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> Any:
        self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("COMMIT" if exc[0] is None else "ROLLBACK")


def timed(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The median time of ``call`` in milliseconds over ``repeat`` runs, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def old_read(db: Db, after: int, f: Filters, limit: int) -> list[Any]:
    """The listing as it was: bound parameters, so no filter can be folded into an index."""
    params = {"after": after, "key": f.key, "holder": f.holder, "type": f.type, "limit": limit}
    return db.run(OLD_QUERY_PG if db.pg else OLD_QUERY, params)


def catch_up(service: Service, f: Filters, scan: int) -> tuple[int, int]:
    """Reads a follower needs from 0 to the end of the log, and the events it found."""
    after, reads, found = 0, 0, 0
    while True:
        page = read_page(service, after, f, 500, scan)
        reads, found, after = reads + 1, found + len(page.events), page.next
        if page.caught_up:
            return reads, found


def append_cost(db: Db, n: int, start: int) -> float:
    """Microseconds per event appended in commits of 100 events."""
    started = time.perf_counter()
    db.fill(n, start, batch=100)
    return (time.perf_counter() - started) * 1e6 / n


INDEXES = (
    "CREATE INDEX IF NOT EXISTS tenure_events_holder ON tenure_events (holder, id)",
    "CREATE INDEX IF NOT EXISTS tenure_events_type ON tenure_events (type, id)",
)


def append_costs(db: Db, n: int, start: int) -> tuple[float, float]:
    """Append cost with the indexes and without them, alternated over three rounds each."""
    costs: dict[bool, list[float]] = {True: [], False: []}
    for i in range(6):
        indexed = i % 2 == 0
        for sql in INDEXES if indexed else ():
            db.execute(sql)
        if not indexed:
            db.execute("DROP INDEX IF EXISTS tenure_events_holder")
            db.execute("DROP INDEX IF EXISTS tenure_events_type")
        costs[indexed].append(append_cost(db, n, start + i * n))
    return statistics.median(costs[True]), statistics.median(costs[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--scan", type=int, default=100_000, help="ids one read examines")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--append", type=int, default=20_000, help="events for the append cost")
    parser.add_argument("--db", help="a database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'events.db'}"
        store = tenure.open_store(url)
        service = Service(store)
        db = Db(url)
        started = time.perf_counter()
        db.fill(args.events)
        print(f"{args.events:,} events written in {time.perf_counter() - started:.1f} s ({url})")
        head = store.last_event_id()
        cases = {
            "holder=nobody (no match)": Filters(holder="nobody"),
            "holder=agent-7 (1 in 200)": Filters(holder="agent-7"),
            "type=force_released (1 in 1000)": Filters(type="force_released"),
            "type=nothing (no match)": Filters(type="nothing"),
        }
        print(f"\none read from after=0, limit 100 (median of {args.repeat}), ms")
        print(f"{'filter':34} {'before':>10} {'after':>10} {'catch-up reads':>15}")
        for name, f in cases.items():
            old_ms, _ = timed(lambda f=f: old_read(db, 0, f, 100), args.repeat)
            new_ms, _ = timed(lambda f=f: read_page(service, 0, f, 100, args.scan), args.repeat)
            reads, _ = catch_up(service, f, args.scan)
            print(f"{name:34} {old_ms:10.2f} {new_ms:10.3f} {reads:15}")
        print("\nevery bell of a follower whose filter has matched nothing since it began, ms")
        print("(before: its cursor stayed at 0; after: it moved to the newest event)")
        for name, f in cases.items():
            if "no match" not in name:
                continue
            old_ms, _ = timed(lambda f=f: old_read(db, 0, f, 100), args.repeat)
            new_ms, _ = timed(lambda f=f: read_page(service, head, f, 100, args.scan), args.repeat)
            print(f"{name:34} before {old_ms:10.2f}  after {new_ms:8.3f}")
        with_ix, without = append_costs(db, args.append, args.events)
        print(
            f"\nappending, commits of 100 events (median of 3 rounds each): {with_ix:.1f} µs/event"
            f" with the (holder, id) and (type, id) indexes, {without:.1f} µs/event without them"
        )
        store.close()


if __name__ == "__main__":
    main()
