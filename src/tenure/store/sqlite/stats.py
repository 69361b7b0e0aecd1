"""Statistics and event retention on SQLite (a mixin of
:class:`tenure.store.sqlite.store.SqliteStore`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from tenure.core.clock import Clock
from tenure.core.models import EventTally
from tenure.core.retention import Pruned
from tenure.store import retention
from tenure.store.sqlfiles import queries
from tenure.store.stats_reads import StatsReads

Q = queries("sqlite")


class SqliteStats(StatsReads):
    clock: Clock

    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rows(self, name: str, **params: Any) -> Iterator[Any]:
        conn = self._conn()
        for start in ("since", "start"):  # a time window: where it starts in the ids
            if start in params:
                params["first_id"] = _first_event_at(conn, params[start])
        return iter(conn.execute(Q[name], params).fetchall())

    def last_event_id(self) -> int:
        return int(self._conn().execute(Q["max_event_id"]).fetchone()[0])

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

    def prune_events(self, max_count: int, before: int, audit_before: int, batch: int) -> Pruned:
        """Fold the next batch over the count or past the age into the totals and delete it,
        but the events kept by age (:mod:`tenure.core.retention`) not past the audit window
        (``audit_before``); delete the oldest of those once past it; close the refusal windows
        that ended."""
        cuts = (max_count, before, audit_before)
        with self._write() as conn:
            return retention.prune(conn, Q, self.clock.now_ms(), cuts, batch, _json_texts)

    def conflict_total(self) -> int:
        return int(self._conn().execute(Q["conflict_total"]).fetchone()[0])


def _first_event_at(conn: sqlite3.Connection, at: int) -> int:
    """An id that splits the event log at the instant ``at``: the events before it are older,
    those from it on are not. Events are appended under the write lock with the instant read
    after taking it, so instants grow with ids and a binary search on the primary key finds it
    (about 2 log2(n) page reads, no index on ``at``). A clock that stepped back can misplace
    the split by the events written meanwhile; the queries check ``at`` as well."""
    lo, hi = conn.execute(Q["event_id_range"]).fetchone()
    if hi == 0:  # no events
        return 0
    hi += 1  # the split is in [lo, hi]: hi when every event is older
    while lo < hi:
        mid = (lo + hi) // 2  # <= the newest id, so an event at or after it exists
        found, found_at = conn.execute(Q["event_at_or_after"], {"id": mid}).fetchone()
        if found_at >= at:
            hi = mid  # (no event between mid and found)
        else:
            lo = found + 1
    return int(lo)


def _json_texts(values: Sequence[str]) -> str:
    return json.dumps(list(values))
