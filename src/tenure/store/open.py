"""Open a store from a URL: ``sqlite:///path``, a plain path, or ``postgresql://…``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenure.core.clock import Clock
from tenure.store.base import Store


def open_store(url: str | Path, *, clock: Clock | None = None, **options: Any) -> Store:
    """Open (and migrate) the database at ``url``.

    ``clock`` replaces the store's clock (the database's for PostgreSQL, the process's for
    SQLite); tests use it with a :class:`~tenure.core.clock.FakeClock`. A PostgreSQL URL that
    cannot be connected to (refused, unknown database or user, wrong password), or a SQLite file
    that cannot be opened, raises :class:`~tenure.store.dburl.DatabaseUnreachable` within
    seconds, naming why (no password).
    """
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        from tenure.store.dburl import check_postgres
        from tenure.store.postgres.store import PostgresStore

        check_postgres(text)
        return PostgresStore(text, clock=clock, **options)
    if text.startswith("sqlite://"):
        text = sqlite_path(text)
    elif "://" in text:
        from tenure.store.dburl import masked

        raise ValueError(
            f"unsupported database URL {masked(text)!r}: use sqlite:/// or postgresql://"
        )
    import sqlite3

    from tenure.store.dburl import DatabaseUnreachable
    from tenure.store.sqlite.store import SqliteStore

    try:
        return SqliteStore(text, clock=clock, **options)
    except (OSError, sqlite3.OperationalError) as exc:  # no such directory, not allowed, …
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" not in str(exc):
            raise  # locked, busy: not the URL's fault
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DatabaseUnreachable(
            f"database_unreachable: sqlite:///{text}: cannot open it ({why}). Check the path "
            "in --db or TENURE_DB (a directory that exists and that you may write in)."
        ) from None


def sqlite_path(url: str) -> str:
    """The path of a ``sqlite://`` URL: ``sqlite:///relative/path``, ``sqlite:////absolute/path``
    (SQLAlchemy's convention)."""
    return url.removeprefix("sqlite://").removeprefix("/")


def sqlite_file(url: str | Path) -> Path | None:
    """The SQLite file ``url`` names (a ``sqlite://`` URL or a plain path), ``None`` for
    another database or SQLite's in-memory one."""
    text = str(url)
    if text.startswith("sqlite://"):
        text = sqlite_path(text)
    elif "://" in text:
        return None
    return None if text in ("", ":memory:") else Path(text)
