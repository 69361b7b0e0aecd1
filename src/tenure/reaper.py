"""The reaper: records one ``expired`` event per lapsed lease, within a second of its deadline.

Expiry itself needs no reaper (every read and write treats a lapsed lease as gone); the reaper
only makes the *record* of the ending timely. Several reapers, in several processes or servers,
may run against one database: the store marks each ending exactly once.
"""

from __future__ import annotations

import logging
import threading

from tenure.core.models import Event
from tenure.service import Service

log = logging.getLogger(__name__)


class Reaper:
    """A daemon thread that calls :meth:`Service.reap` every ``interval`` seconds."""

    def __init__(self, service: Service, interval: float = 0.25, batch: int = 1000) -> None:
        if not 0 < interval <= 1:
            raise ValueError("the reaper interval must be in (0, 1] seconds")
        self.service, self.interval, self.batch = service, interval, batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.recorded = 0

    def run_once(self) -> list[Event]:
        """Reap until no lapsed lease is left unrecorded."""
        out: list[Event] = []
        while True:
            batch = self.service.reap(self.batch)
            out.extend(batch)
            if len(batch) < self.batch:
                break
        self.recorded += len(out)
        return out

    def start(self) -> Reaper:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tenure-reaper", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.run_once()
            except Exception:  # the next round retries; a reaper must not die
                log.exception("reaper round failed")

    def stop(self, timeout: float = 5) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> Reaper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
