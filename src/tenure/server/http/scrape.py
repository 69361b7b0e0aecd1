"""``/metrics`` for scrapers: the database's figures cached for a few seconds, and an optional
token of its own.

The statistics behind ``/metrics`` read the database (counts by ending, live leases and
claims, the expired share over windows): a scraper, or anyone, asking often would run them on
every request. They are read at most once per ``TENURE_METRICS_CACHE_MS`` (5 s) and shared by
every scrape meanwhile; what this server counts itself (latencies, renewals) is always current.
With ``TENURE_METRICS_TOKEN`` set, ``/metrics`` answers only ``Authorization: Bearer <it>``.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from typing import Any

from tenure.core.validate import bearer_token
from tenure.errors import Unauthenticated


class StatsCache:
    """``read()`` at most once per ``ttl_ms``; concurrent callers wait for one read. Thread-safe."""

    def __init__(
        self,
        read: Callable[[], dict[str, Any]],
        ttl_ms: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read, self._ttl_s, self._clock = read, ttl_ms / 1000, clock
        self._lock = threading.Lock()
        self._value: dict[str, Any] | None = None
        self._at = 0.0
        self.reads = 0  # how many times the statistics ran

    def get(self) -> dict[str, Any]:
        with self._lock:
            if self._value is None or self._clock() - self._at >= self._ttl_s:
                self._value = self._read()
                self._at = self._clock()
                self.reads += 1
            return self._value


def check_token(authorization: str | None, expected: str | None) -> None:
    """Refuse a scrape without ``Authorization: Bearer <expected>`` (nothing to check when no
    token is configured)."""
    if expected is None:
        return
    given = bearer_token(authorization)
    if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthenticated(
            "/metrics wants the metrics token: send Authorization: Bearer <TENURE_METRICS_TOKEN>"
        )
