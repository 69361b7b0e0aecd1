"""Statistics and event retention on PostgreSQL (a mixin of
:class:`tenure.store.postgres.store.PostgresStore`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from tenure.core.models import EventTally
from tenure.core.retention import Pruned
from tenure.store import retention
from tenure.store.sqlfiles import queries
from tenure.store.stats_reads import StatsReads

Q = queries("postgres")


class PostgresStats(StatsReads):
    pool: ConnectionPool

    def _tx(self) -> AbstractContextManager[psycopg.Cursor[Any]]:
        raise NotImplementedError

    def _all(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _now(self, cur: psycopg.Cursor[Any]) -> int:
        raise NotImplementedError

    def _rows(self, name: str, **params: Any) -> Iterator[Any]:
        return iter(self._all(Q[name], params))

    def last_event_id(self) -> int:
        return int(self._all(Q["max_event_id"], {})[0][0])

    def tally_events(self, after: int) -> EventTally:
        with self.pool.connection() as conn:
            # One snapshot: the folded totals and the events after them.
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            try:
                with conn.transaction(), conn.cursor() as cur:
                    pruned = int(_first(cur.execute(Q["pruned_upto"])))
                    base = after < pruned
                    counts: dict[str, int] = {}
                    if base:
                        counts = {k: int(n) for k, n in cur.execute(Q["event_totals"])}
                    upto = max(after, pruned)
                    found = cur.execute(Q["count_events_after"], {"after": upto}).fetchall()
            finally:
                conn.isolation_level = None
        for kind, n, newest in found:
            counts[kind] = counts.get(kind, 0) + int(n)
            upto = max(upto, int(newest))
        return EventTally(upto, counts, base)

    def prune_events(self, max_count: int, before: int, audit_before: int, batch: int) -> Pruned:
        """As :meth:`tenure.store.sqlite.stats.SqliteStats.prune_events`."""
        cuts = (max_count, before, audit_before)
        with self._tx() as cur:
            cur.execute(Q["serialize_pruning"])
            return retention.prune(cur, Q, self._now(cur), cuts, batch, list)

    def conflict_total(self) -> int:
        return int(self._all(Q["conflict_total"], {})[0][0])


def _first(cur: psycopg.Cursor[Any]) -> Any:
    row = cur.fetchone()
    return None if row is None else row[0]
