"""Whether a store's new connections reach the database its earlier ones did.

A server cannot prove that a database it reconnects to did not go back in time: a standby
promoted after a failover may have missed the last commits, a database restored from a dump
under a running server has lost what came after the dump. Either would grant tokens again that
were already handed out. So every new connection of the pool reads who it reached (the
PostgreSQL server's start instant and the database's oid: a promoted standby, a restarted or
restored server and a dropped and re-created database all differ), and the first one to find
something else than before raises the token floor from the clock (reason
``database_changed``) before the pool hands it out; the others wait for it. The server's watch
does the same (reason ``reconnect``) before it lifts an outage it saw.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

log = logging.getLogger("tenure.store")

#: who a connection reached: the server's start instant and the database's oid
IDENTITY = (
    b"SELECT pg_postmaster_start_time()::text,"
    b" (SELECT oid FROM pg_database WHERE datname = current_database())::bigint"
)

Raise = Callable[["psycopg.Connection[Any]", str], object]


def identity(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute(IDENTITY).fetchone()
    return tuple(row) if row else ()


class Continuity:
    """The identity the store's connections reached last, and the floor raise when it moves."""

    def __init__(self, raise_floor: Raise) -> None:
        self.raise_floor = raise_floor
        self.seen: tuple[Any, ...] | None = None
        self._lock = threading.Lock()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection: if it reached another server or database than the last one
        did, raise the floor on it (the other new connections wait for that)."""
        found = identity(conn)
        with self._lock:
            if self.seen is not None and self.seen != found:
                log.warning(
                    "the database changed under this server (%s, was %s): raising the token "
                    "floor from the clock",
                    found,
                    self.seen,
                )
                self.raise_floor(conn, "database_changed")
            self.seen = found

    def reconnected(self, conn: psycopg.Connection[Any]) -> None:
        """The database answers again after an outage: raise the floor on ``conn``, then
        take what it reaches as the identity."""
        with self._lock:
            self.raise_floor(conn, "reconnect")
            self.seen = identity(conn)
