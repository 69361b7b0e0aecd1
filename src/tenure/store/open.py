"""Open a store from a URL: ``sqlite:///path``, a plain path, or ``postgresql://…``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenure.core.clock import Clock
from tenure.store.base import Store


def open_store(url: str | Path, *, clock: Clock | None = None, **options: Any) -> Store:
    """Open (and migrate) the database at ``url``.

    ``clock`` replaces the store's clock (the database's for PostgreSQL, the process's for
    SQLite); tests use it with a :class:`~tenure.core.clock.FakeClock`.
    """
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        from tenure.store.postgres import PostgresStore

        return PostgresStore(text, clock=clock, **options)
    if text.startswith("sqlite://"):
        # sqlite:///relative/path, sqlite:////absolute/path (SQLAlchemy's convention)
        text = text.removeprefix("sqlite://").removeprefix("/")
    elif "://" in text:
        raise ValueError(f"unsupported database URL {text!r}: use sqlite:/// or postgresql://")
    from tenure.store.sqlite import SqliteStore

    return SqliteStore(text, clock=clock, **options)
