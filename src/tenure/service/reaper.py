"""The reaper: records one ``expired`` event per lapsed lease, within a second of its deadline.

Expiry itself needs no reaper (every read and write treats a lapsed lease as gone); the reaper
only makes the *record* of the ending timely. Several reapers, in several processes or servers,
may run against one database: the store marks each ending exactly once.
"""

from __future__ import annotations

import logging
import time

from tenure.core.compaction import CompactionResult
from tenure.core.models import Event
from tenure.service.leases import Service
from tenure.service.periodic import Periodic

log = logging.getLogger(__name__)
PRUNE_BATCHES = 10


class Reaper(Periodic):
    """A daemon thread that calls :meth:`Service.reap` every ``interval`` seconds.

    With ``retention`` (``(max events, max age ms)``), it also prunes the event log every
    ``prune_every`` seconds, at most ``PRUNE_BATCHES`` batches of ``batch`` events a round, so
    pruning a large backlog never holds the write lock for long.

    With ``compact_every`` (seconds; 0: never), it runs a compaction pass
    (:meth:`Service.compact`) that often, at most ``PRUNE_BATCHES`` batches of each kind a
    round; a pass that left work due is followed by another the next round, so a large backlog
    is worked off between the rounds of reaping, never holding them up for long.
    """

    thread_name = "tenure-reaper"

    def __init__(
        self,
        service: Service,
        interval: float = 0.25,
        batch: int = 1000,
        *,
        retention: tuple[int, int] | None = None,
        prune_every: float = 5.0,
        compact_every: float = 0,
    ) -> None:
        if not 0 < interval <= 1:
            raise ValueError("the reaper interval must be in (0, 1] seconds")
        super().__init__(interval)
        self.service, self.batch = service, batch
        self.retention, self.prune_every = retention, prune_every
        self._next_prune = 0.0
        self.pruned = 0
        self.compact_every = compact_every
        self._next_compact = time.monotonic() + compact_every
        self.compacted = 0  # rows deleted by the scheduled passes
        self.recorded = 0

    def run_once(self) -> list[Event]:
        """Reap until no lapsed lease is left unrecorded (the ``expired`` events); then end
        the tokens of dispatched agents whose claim ended, record stalled claims, and count the
        lapsed claims as failed attempts (parking their items at the policy's limit)."""
        out: list[Event] = []
        while True:
            batch = self.service.reap(self.batch)
            out.extend(batch)
            if len(batch) < self.batch:
                break
        self.recorded += len(out)
        self.service.revoke_ended_agents(self.batch)
        self.service.items.record_stalls(self.batch)
        self.service.items.record_lapses(self.batch)
        return out

    def prune_once(self) -> int:
        """Prune up to ``PRUNE_BATCHES`` batches of events past the retention."""
        if self.retention is None:
            return 0
        max_count, max_age_ms = self.retention
        dropped = 0
        for _ in range(PRUNE_BATCHES):
            n = self.service.prune_events(max_count, max_age_ms, self.batch)
            dropped += n
            if n == 0:  # nothing due (or only events kept by age: the next round goes on)
                break
        self.pruned += dropped
        return dropped

    def compact_once(self) -> CompactionResult:
        """One bounded compaction pass; the next is due at once if this one left work."""
        result = self.service.compact(self.batch, PRUNE_BATCHES)
        self.compacted += result.deleted
        wait = self.compact_every if result.complete else 0
        self._next_compact = time.monotonic() + wait
        return result

    def round(self) -> None:
        if self.service.store.health.down is not None:
            return  # the database is gone (the server's watch says why): nothing to do
        try:
            self.run_once()
            if time.monotonic() >= self._next_prune:
                self._next_prune = time.monotonic() + self.prune_every
                self.prune_once()
            if self.compact_every > 0 and time.monotonic() >= self._next_compact:
                self.compact_once()
        except Exception:  # the next round retries; a reaper must not die
            log.exception("reaper round failed")
