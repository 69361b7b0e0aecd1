"""The statistics reads both stores share: each is one named query of the backend's
``queries.sql``, run by the store's ``_rows``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class StatsReads:
    def _rows(self, name: str, **params: Any) -> Iterator[Any]:
        raise NotImplementedError

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
