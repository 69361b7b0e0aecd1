"""Statistics of the fleet, from the database, so every server sharing it reports the same.

All-time counts come from the event log (plus the totals that retention folded away), kept as
a running tally that only reads the events newer than the last look; but conflicts, whose events
count a window of refusals each (``repeats``), come from the keys' own counters. Windowed
figures (the last hour, the last day) are counted from the events in the window.
"""

from __future__ import annotations

import threading
from typing import Any

from tenure.core import validate as v
from tenure.errors import InvalidRequest
from tenure.store.base import Store

ENDINGS = ("released", "expired", "force_released", "taken_over", "completed")
KIND_OF_ENDING = {e: e for e in ENDINGS} | {"completed": "released:completed"}
WINDOWS = {"1h": 3_600_000, "24h": 86_400_000}
TOP = 10
HOLD_SAMPLE = 100_000
MAX_BUCKETS = 1440
MAX_SPAN_MS = 7 * 86_400_000


def endings(counts: dict[str, int]) -> dict[str, int]:
    """Counts by ending; a completion's release counts as ``completed``, not ``released``."""
    return {e: counts.get(KIND_OF_ENDING[e], 0) for e in ENDINGS}


def expired_share(expired: int, ended: int) -> float | None:
    return None if ended == 0 else round(expired / ended, 6)


def percentile(values: list[int], q: float) -> int | None:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n * q)
    return ordered[int(rank) - 1]


class Tally:
    """All-time event counts by kind, read incrementally (thread-safe)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._upto = 0
        self._counts: dict[str, int] = {}

    def totals(self) -> dict[str, int]:
        with self._lock:
            tally = self.store.tally_events(self._upto)
            if tally.base:
                self._counts = dict(tally.counts)
            else:
                for kind, n in tally.counts.items():
                    self._counts[kind] = self._counts.get(kind, 0) + n
            self._upto = tally.upto
            return dict(self._counts)


class StatsView:
    """``GET /v1/stats`` and ``GET /v1/stats/timeline`` over one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.tally = Tally(store)

    def stats(self) -> dict[str, Any]:
        now = self.store.now_ms()
        totals = self.tally.totals()
        leases, claims = self.store.live_counts(now)
        day = now - WINDOWS["24h"]
        holds = self.store.hold_times(day, HOLD_SAMPLE)
        return {
            "now": now,
            "endings": endings(totals),
            "acquisitions": totals.get("acquired", 0),
            "conflicts": self.store.conflict_total(),  # (the log coalesces refusals)
            "live_leases": leases,
            "live_claims": claims,
            "stalled_claims": self.store.count_stalled(now),
            "windows": {name: self._window(now - span) for name, span in WINDOWS.items()},
            "hottest_keys": [
                {"key": key, "conflicts": n} for key, n in self.store.hot_keys(day, TOP)
            ],
            "expiring_holders": [
                {
                    "holder": holder,
                    "expired": expired,
                    "ended": ended,
                    "expired_share": expired_share(expired, ended),
                }
                for holder, expired, ended in self.store.expiring_holders(day, TOP)
            ],
            "hold_ms": {
                "count": len(holds),
                "p50": percentile(holds, 0.5),
                "p99": percentile(holds, 0.99),
            },
        }

    def _window(self, since: int) -> dict[str, Any]:
        counts = self.store.count_events_since(since)
        ends = endings(counts)
        ended = sum(ends.values())
        return {
            "endings": ends,
            "ended": ended,
            "expired_share": expired_share(ends["expired"], ended),
            "acquisitions": counts.get("acquired", 0),
            "conflicts": counts.get("conflict", 0),
        }

    def timeline(self, span_ms: int = 3_600_000, bucket_ms: int = 60_000) -> dict[str, Any]:
        """Endings per bucket of ``bucket_ms`` over the last ``span_ms``, oldest first.

        At most ``MAX_BUCKETS`` buckets: a finer ``bucket_ms`` is widened (the reply's
        ``bucket_ms`` is the one used)."""
        span_ms = v.check_positive("span_ms", span_ms, MAX_SPAN_MS)
        bucket_ms = v.check_positive("bucket_ms", bucket_ms, MAX_SPAN_MS)
        if bucket_ms < 1000:
            raise InvalidRequest("bucket_ms: must be at least 1000 (one second)", field="bucket_ms")
        if -(-span_ms // bucket_ms) > MAX_BUCKETS:  # widen to whole seconds; the reply says
            bucket_ms = -(-span_ms // MAX_BUCKETS // 1000) * 1000
        count = -(-span_ms // bucket_ms)
        now = self.store.now_ms()
        start = (now // bucket_ms - count + 1) * bucket_ms
        buckets = [
            {"start": start + i * bucket_ms, **dict.fromkeys(ENDINGS, 0)} for i in range(count)
        ]
        for slot, kind, n in self.store.timeline(start, bucket_ms):
            if 0 <= slot < count and kind in ENDINGS:
                buckets[slot][kind] += n
        return {"bucket_ms": bucket_ms, "start": start, "end": now, "buckets": buckets}
