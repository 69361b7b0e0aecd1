"""The SQLite store: :class:`tenure.store.base.Store` over a
:class:`~tenure.store.sqlite.connector.SqliteConnector`."""

from __future__ import annotations

from pathlib import Path

from tenure.core.clock import Clock
from tenure.store.base import Store
from tenure.store.sqlite.connector import SqliteConnector


class SqliteStore(Store):
    """A store in one SQLite file, safe to share between threads and processes (see
    :class:`SqliteConnector` for the options)."""

    connector: SqliteConnector

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 30_000,
    ) -> None:
        super().__init__(
            SqliteConnector(
                path, clock=clock, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms
            )
        )
        self.writer = self.connector.writer  # SQLite's writer (connection, lock, batch)
        self.path = self.connector.path
