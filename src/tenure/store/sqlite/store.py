"""The SQLite store: :class:`tenure.store.base.Store` over a
:class:`~tenure.store.sqlite.connector.SqliteConnector`."""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

from tenure.store.base import Store
from tenure.store.sqlite.connector import SqliteConnector, SqliteOptions


class SqliteStore(Store):
    """A store in one SQLite file, safe to share between threads and processes (see
    :class:`SqliteConnector` for the options)."""

    connector: SqliteConnector

    def __init__(self, path: str | Path, **options: Unpack[SqliteOptions]) -> None:
        super().__init__(SqliteConnector(path, **options))
        self.writer = self.connector.writer  # SQLite's writer (connection, lock, batch)
        self.path = self.connector.path
