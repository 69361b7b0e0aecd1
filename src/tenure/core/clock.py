"""Time enters tenure through a clock. All instants are integer milliseconds since the epoch."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """The current instant in milliseconds since the Unix epoch (UTC)."""
        ...


class SystemClock:
    """The process's wall clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FakeClock:
    """A clock that moves only when told to. Thread-safe."""

    def __init__(self, start_ms: int = 1_800_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("a fake clock only moves forward")
        with self._lock:
            self._now += ms
            return self._now

    def set(self, now_ms: int) -> None:
        with self._lock:
            self._now = now_ms
