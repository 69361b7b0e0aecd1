"""The database drivers' errors, sorted in one place for everyone above the store.

A caller (the HTTP problem handlers, the hot path, direct mode, the server's executor) asks
:func:`failure` what an exception says about the database instead of knowing :mod:`sqlite3`,
psycopg or its pool: ``None`` when it is no driver's error, else a :class:`Failure` with the
two facts that decide the answer: whether the database is *down* (it cannot be reached or used
now: try again later) rather than a bug, and whether the call was *sent* (it may have reached
the database, so a write may have happened) or not (no connection was had: nothing ran).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import psycopg
import psycopg_pool

#: the drivers' errors of a database that cannot be used as asked: an outage, or a bug
DRIVER_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.OperationalError,
    psycopg.OperationalError,
    psycopg.errors.ReadOnlySqlTransaction,  # a standby: no primary to write to (a failover)
)
# What SQLite says when the file cannot be used right now (as opposed to a bug in a statement).
SQLITE_OUTAGES = (
    "unable to open",
    "disk i/o error",
    "database is locked",
    "database or disk is full",
    "readonly database",
    "locking protocol",
)


@dataclass(frozen=True)
class Failure:
    """What a driver's error says: ``down``, the database cannot be reached or used now (else
    a bug); ``sent``, the call may have reached it (a write may have happened)."""

    error: Exception
    down: bool
    sent: bool

    @property
    def kind(self) -> str:
        """The error's class name, for messages."""
        return type(self.error).__name__


def failure(exc: BaseException) -> Failure | None:
    """What ``exc`` says about the database; ``None`` if it is no driver's error.

    Every psycopg ``OperationalError`` is an outage (a refused or dropped connection, a
    ``PoolTimeout`` waiting for one, an administrator's shutdown, a cancelled statement); for
    SQLite only the errors of the file itself (it cannot be opened, read or locked). Only a
    ``PoolTimeout`` is known not to have been sent: no connection, nothing ran."""
    if not isinstance(exc, DRIVER_ERRORS):
        return None
    down = not isinstance(exc, sqlite3.Error) or any(
        marker in str(exc).lower() for marker in SQLITE_OUTAGES
    )
    return Failure(exc, down, sent=not isinstance(exc, psycopg_pool.PoolTimeout))


def unreachable(exc: BaseException) -> Exception | None:
    """The error, if a group commit failed for want of a database (its connection broke, the
    pool had none, the server is shutting down) rather than because of one of its calls: the
    first of psycopg's errors in the chain of causes (a batch that failed before: the original
    one). A deadlock or a serialization failure (SQLSTATE class 40) is a call's doing."""
    cause: BaseException | None = exc
    seen: set[int] = set()  # a chain of causes may loop back (``raise exc from exc``)
    while cause is not None and not isinstance(cause, psycopg.Error) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__
    while (
        isinstance(cause, psycopg.Error)
        and isinstance(cause.__cause__, psycopg.Error)
        and id(cause) not in seen
    ):
        seen.add(id(cause))
        cause = cause.__cause__
    if not isinstance(cause, psycopg.OperationalError | psycopg.InterfaceError):
        return None
    return None if (cause.sqlstate or "").startswith("40") else cause


def sync_failed(why: object = None) -> Exception:
    """The error of every call a failed sync of the SQLite WAL covered (the commit was written
    but may not be durable: nobody may count on it)."""
    detail = "" if why is None else f": {why}"
    return sqlite3.OperationalError(f"syncing the commit failed{detail}")
