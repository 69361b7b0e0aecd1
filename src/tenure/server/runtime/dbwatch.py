"""The server's watch on its database: a thread that checks it every :data:`INTERVAL_S` and
writes what it found in the store's :class:`~tenure.store.health.Health`.

While the database does not answer, ``/readyz`` says so (``503``, naming why) and the store
refuses at once what would wait for it, so every call is answered ``503 unavailable`` within
about a second of the outage instead of after the pool's 30 s. The first check that succeeds
again lifts it, once the store made sure that no token it grants goes back (PostgreSQL: the
token floor raised from the clock, since the database that answers may be a standby that
missed the last commits). ``/healthz`` is not affected: it says the process is alive.
"""

from __future__ import annotations

import logging

from tenure.service.periodic import Periodic
from tenure.store.base import Store
from tenure.store.health import first_line

log = logging.getLogger("tenure.server")
INTERVAL_S = 0.5


class DatabaseWatch(Periodic):
    """A daemon thread checking ``store`` every ``interval`` seconds (:meth:`check`)."""

    thread_name = "tenure-dbwatch"

    def __init__(self, store: Store, interval: float = INTERVAL_S) -> None:
        super().__init__(interval)
        self.store = store

    def round(self) -> None:
        self.check()

    def check(self) -> None:
        """Probe the database once and record the finding (a change is logged)."""
        health = self.store.health
        try:
            self.store.probe()
            if health.down is not None:  # back: no token may go back (before any call)
                self.store.recovered()
        except Exception as exc:
            why = first_line(exc)
            if health.mark(why):
                log.error("the database cannot be reached: %s", why)
            return
        if health.mark(None):
            log.warning("the database answers again")
