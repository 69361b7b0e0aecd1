"""Statistics and event retention on SQLite (a mixin of
:class:`tenure.store.sqlite.SqliteStore`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from tenure.core.models import EventTally
from tenure.store.sqlfiles import queries

Q = queries("sqlite")


class SqliteStats:
    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rows(self, name: str, **params: Any) -> Iterator[Any]:
        return iter(self._conn().execute(Q[name], params).fetchall())

    def tally_events(self, after: int) -> EventTally:
        conn = self._conn()
        conn.execute("BEGIN")  # one snapshot: the folded totals and the events after them
        try:
            pruned = int(conn.execute(Q["pruned_upto"]).fetchone()[0])
            base = after < pruned
            counts: dict[str, int] = {}
            if base:
                counts = {k: int(n) for k, n in conn.execute(Q["event_totals"])}
            upto = max(after, pruned)
            for kind, n, newest in conn.execute(Q["count_events_after"], {"after": upto}):
                counts[kind] = counts.get(kind, 0) + int(n)
                upto = max(upto, int(newest))
        finally:
            conn.execute("COMMIT")
        return EventTally(upto, counts, base)

    def count_events_since(self, since: int) -> dict[str, int]:
        return {k: int(n) for k, n in self._rows("count_events_since", since=since)}

    def live_counts(self, now: int) -> tuple[int, int]:
        leases, claims = next(self._rows("live_counts", now=now))
        return int(leases), int(claims)

    def hot_keys(self, since: int, limit: int) -> list[tuple[str, int]]:
        return [(k, int(n)) for k, n in self._rows("hot_keys", since=since, limit=limit)]

    def expiring_holders(self, since: int, limit: int) -> list[tuple[str, int, int]]:
        rows = self._rows("expiring_holders", since=since, limit=limit)
        return [(h, int(e), int(n)) for h, e, n in rows]

    def hold_times(self, since: int, limit: int) -> list[int]:
        return [int(h) for (h,) in self._rows("hold_times", since=since, limit=limit)]

    def timeline(self, start: int, bucket_ms: int) -> list[tuple[int, str, int]]:
        rows = self._rows("timeline", start=start, bucket=bucket_ms)
        return [(int(slot), kind, int(n)) for slot, kind, n in rows]

    def prune_events(self, max_count: int, before: int, batch: int) -> int:
        with self._write() as conn:
            newest = int(conn.execute(Q["max_event_id"]).fetchone()[0])
            params = {"batch": batch, "over_count": newest - max_count, "before": before}
            upto = conn.execute(Q["prune_upto"], params).fetchone()[0]
            if upto is None:
                return 0
            conn.execute(Q["fold_events"], {"upto": upto})
            deleted = conn.execute(Q["delete_events"], {"upto": upto}).rowcount
            conn.execute(Q["set_pruned"], {"upto": upto})
            return int(deleted)
