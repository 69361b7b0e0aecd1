"""Statistics and event retention on SQLite (a mixin of
:class:`tenure.store.sqlite.SqliteStore`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from tenure.core.models import EventTally
from tenure.store.sqlfiles import queries
from tenure.store.stats_reads import StatsReads

Q = queries("sqlite")


class SqliteStats(StatsReads):
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
