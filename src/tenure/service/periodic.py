"""A daemon thread that does one round of work every few moments: the reaper's and the
server's watch on its database."""

from __future__ import annotations

import threading
from typing import Self


class Periodic:
    """Calls :meth:`round` every ``interval`` seconds on a daemon thread named ``thread_name``,
    from :meth:`start` until :meth:`stop` (or the ``with`` block's end)."""

    thread_name = "tenure-periodic"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def round(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.round()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
