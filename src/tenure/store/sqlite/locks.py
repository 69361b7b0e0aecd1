"""Meeting another connection's lock on a SQLite file."""

from __future__ import annotations

import sqlite3
import time


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """The error says another connection holds the lock (SQLITE_BUSY)."""
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY or "locked" in str(exc)


def retry_locked(conn: sqlite3.Connection, sql: str, budget_s: float) -> None:
    """Run ``sql``, retrying while the file is locked: switching a new file to WAL needs the
    write lock, and SQLite does not apply ``busy_timeout`` to it."""
    deadline = time.monotonic() + budget_s
    delay = 0.001
    while True:
        try:
            conn.execute(sql)
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
