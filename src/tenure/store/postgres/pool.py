"""psycopg's connection pool, which stops waiting for a connection once the database is known
to be down.

A request that finds no free connection waits for one for the pool's timeout (30 s). While
PostgreSQL is down no connection comes, so that wait only turns into a late ``503`` after the
client's own timeout. This pool waits in slices of :data:`SLICE_S` and gives up as soon as the
store's :class:`~tenure.store.health.Health` says the database did not answer its last check:
``PoolTimeout`` naming why, at once for requests that arrive while it is down. Nothing was sent
to the database, so a client may retry anything.
"""

from __future__ import annotations

from time import monotonic
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from tenure.store.health import Health

#: how often a request waiting for a connection looks whether the database went down
SLICE_S = 0.25
#: the watcher's own connection: how long connecting, and an unacknowledged send, may take
PROBE_TIMEOUT_S = 2


class Pool(ConnectionPool[psycopg.Connection[Any]]):
    """A :class:`ConnectionPool` that consults ``health`` while it waits."""

    def __init__(self, url: str, *, health: Health, **options: Any) -> None:
        super().__init__(url, **options)
        self.health = health

    def getconn(self, timeout: float | None = None) -> psycopg.Connection[Any]:
        wait = self.timeout if timeout is None else timeout
        deadline = monotonic() + wait
        while True:
            if self.health.down is not None:
                raise PoolTimeout(
                    f"the database did not answer its last check ({self.health.down})"
                )
            left = deadline - monotonic()
            try:
                return super().getconn(timeout=max(0.0, min(SLICE_S, left)))
            except PoolTimeout:
                if deadline - monotonic() <= 0:
                    raise PoolTimeout(f"couldn't get a connection after {wait:.2f} sec") from None


def probe_connection(url: str) -> psycopg.Connection[Any]:
    """A connection of its own for the watcher's checks: connecting, and any send the server
    does not acknowledge (a host gone from the network), fail within :data:`PROBE_TIMEOUT_S`."""
    return psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=PROBE_TIMEOUT_S,
        tcp_user_timeout=PROBE_TIMEOUT_S * 1000,
        keepalives=1,
        keepalives_idle=PROBE_TIMEOUT_S,
        keepalives_interval=1,
        keepalives_count=2,
    )
