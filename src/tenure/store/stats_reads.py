"""The store's statistics and event retention (part of :class:`tenure.store.base.Store`), the
same on every backend: each is a named query of the backend's ``queries.sql`` run by its
connector (:mod:`tenure.store.connector`)."""

from __future__ import annotations

from typing import Any

from tenure.core.models import EventTally
from tenure.core.retention import Pruned
from tenure.store import retention
from tenure.store.connector import Connector


class StatsReads:
    connector: Connector

    def _rows(self, name: str, **params: Any) -> Any:
        return self.connector.stats_rows(name, params)

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

    def last_event_id(self) -> int:
        """The newest event's id (0 for none) that a follower may read up to: every event up
        to it that will ever be committed is, and a read that starts after this one sees it (on
        PostgreSQL, no further than the ids a transaction in flight holds)."""
        return _first(self.connector.query_one("max_event_id", {}))

    def conflict_total(self) -> int:
        """Every refusal ever counted (the keys' own counters: the log coalesces refusals
        and retention drops events)."""
        return _first(self.connector.query_one("conflict_total", {}))

    def tally_events(self, after: int) -> EventTally:
        """Counts by kind of the events after id ``after``, in one snapshot; when ``after`` is
        older than what retention folded away, the folded totals are included (``base``)."""
        q = self.connector.Q
        head = self.last_event_id()  # before the snapshot, which then sees every id up to it
        with self.connector.snapshot() as cur:  # the folded totals and the events after them
            pruned = _first(cur.execute(q["pruned_upto"]).fetchone())
            base = after < pruned
            counts: dict[str, int] = {}
            if base:
                counts = {k: int(n) for k, n in cur.execute(q["event_totals"]).fetchall()}
            upto = max(after, pruned)
            found = cur.execute(q["count_events_after"], {"after": upto, "upto": head}).fetchall()
        for kind, n, newest in found:
            counts[kind] = counts.get(kind, 0) + int(n)
            upto = max(upto, int(newest))
        return EventTally(upto, counts, base)

    def prune_events(self, max_count: int, before: int, audit_before: int, batch: int) -> Pruned:
        """Fold into the totals the oldest batch of up to ``batch`` events that are beyond
        the newest ``max_count`` or older than ``before``, and delete them, except the kinds
        kept by age (:data:`tenure.core.retention.KEPT_BY_AGE`) not older than
        ``audit_before``: retention by count keeps those. Also delete up to ``batch`` of the
        events kept so, once older than ``audit_before``; close the refusal windows that
        ended. What it deleted and folded."""
        cuts = (max_count, before, audit_before)
        c = self.connector
        with c.writing() as cur:
            cur.execute(c.Q["serialize_pruning"])  # one pruner at a time, across servers too
            return retention.prune(cur, c.Q, c.now_in(cur), cuts, batch, c.texts)


def _first(row: Any) -> int:
    return int(row[0]) if row and row[0] is not None else 0
