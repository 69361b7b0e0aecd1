"""Whether the database answered its last check, and why not.

A server checks its database every half second (:mod:`tenure.server.runtime.dbwatch` calls the
store's ``probe()``) and writes what it found here. While ``down`` is set the store refuses at
once what would otherwise wait for a database that is gone (PostgreSQL: a connection from the
pool, for its 30 s timeout; SQLite: a file that was removed), so callers get their ``503`` now.
Without a watcher (the library, direct mode) ``down`` stays ``None`` and nothing changes.
"""

from __future__ import annotations

import time


class Health:
    """``down``: why the database did not answer its last check (``None``: it did, or nobody
    checks); ``since``: when it went down (monotonic seconds)."""

    __slots__ = ("down", "since")

    def __init__(self) -> None:
        self.down: str | None = None
        self.since: float | None = None

    def mark(self, why: str | None) -> bool:
        """Record a check's finding; whether the database went down or came back with it."""
        changed = (why is None) != (self.down is None)
        if why is None:
            self.since = None
        elif self.down is None:
            self.since = time.monotonic()
        self.down = why
        return changed


def first_line(exc: BaseException) -> str:
    """``Kind: the first line of the message`` (drivers' messages run over several lines)."""
    text = " ".join(str(exc).split("\n", 1)[0].split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
