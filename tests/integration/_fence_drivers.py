"""The connections the fence's transaction guard accepts, opened the way users open them, and
a few driver-neutral helpers for the tests of ``TableFence.transaction``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import psycopg2
import pytest

from tenure.fence import TableFence

KEY = "reports/nightly"
SCHEMA = "CREATE TABLE reports (name TEXT PRIMARY KEY, body TEXT NOT NULL)"
KINDS = (
    "sqlite3",
    "psycopg",
    "psycopg2",
    "sqlalchemy-sqlite",
    "sqlalchemy-postgres",
    "session-sqlite",
    "session-postgres",
)


@dataclass
class Db:
    """One database holding the user's ``reports`` table and the fence table."""

    kind: str
    url: str  # sqlite:///path or postgresql://…
    opened: list[Any] = field(default_factory=list)

    @property
    def postgres(self) -> bool:
        return self.url.startswith("postgresql")

    def plain(self) -> Any:
        """A plain connection (sqlite3 or psycopg) to look at the database from outside."""
        if self.postgres:
            conn: Any = psycopg.connect(self.url, autocommit=True)
        else:
            conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), isolation_level=None)
        self.opened.append(conn)
        return conn

    def connect(self, **options: Any) -> Any:
        """A connection of this kind (``options`` go to the driver or the engine)."""
        conn = CONNECT[self.kind.partition("-")[0]](self, **options)
        self.opened.append(conn)
        return conn

    def report(self) -> str | None:
        row = run(self.plain(), "SELECT body FROM reports WHERE name = 'nightly'")
        return None if row is None else str(row[0])

    def current(self, table: str = "tenure_fence") -> int | None:
        row = run(self.plain(), TableFence(table).sql("current", "sqlite"), (KEY,))
        return None if row is None else int(row[0])

    def close(self) -> None:
        for conn in reversed(self.opened):
            if hasattr(conn, "dispose"):
                conn.dispose()
            else:
                conn.close()


def _sqlalchemy_url(db: Db, driver: str) -> str:
    if db.postgres:
        return db.url.replace("postgresql://", f"postgresql+{driver}://", 1)
    return db.url


def _engine(db: Db, driver: str, **options: Any) -> Any:
    import sqlalchemy

    engine = sqlalchemy.create_engine(_sqlalchemy_url(db, driver), **options)
    db.opened.append(engine)
    return engine


CONNECT: dict[str, Callable[..., Any]] = {
    "sqlite3": lambda db, **o: sqlite3.connect(
        db.url.removeprefix("sqlite:///"), **{"timeout": 10, "check_same_thread": False, **o}
    ),
    "psycopg": lambda db, **o: psycopg.connect(db.url, **o),
    "psycopg2": lambda db, **o: _psycopg2(db.url, **o),
    "sqlalchemy": lambda db, **o: _engine(db, "psycopg2", **o).connect(),
    "session": lambda db, **o: _session(_engine(db, "psycopg", **o)),
}


def _psycopg2(url: str, autocommit: bool = False) -> Any:
    conn = psycopg2.connect(url)
    conn.autocommit = autocommit
    return conn


def _session(engine: Any) -> Any:
    from sqlalchemy.orm import Session

    return Session(engine)


def run(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """Run ``sql`` (``?`` markers) on any of the kinds; returns the first row or None."""
    module = type(conn).__module__.partition(".")[0]
    if module == "sqlite3":
        return conn.execute(sql, params).fetchone()
    if module == "psycopg":
        cur = conn.execute(sql.replace("?", "%s"), params)
        return cur.fetchone() if cur.description else None
    if module == "psycopg2":
        with conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)
            return cur.fetchone() if cur.description else None
    from sqlalchemy import text

    names = iter(range(len(params)))
    named = "".join(f":p{next(names)}" if c == "?" else c for c in sql)
    result = conn.execute(text(named), {f"p{i}": v for i, v in enumerate(params)})
    return result.fetchone() if result.returns_rows else None


def publish(conn: Any, body: str) -> None:
    """The user's guarded write (inside the block)."""
    run(conn, "DELETE FROM reports WHERE name = 'nightly'")
    run(conn, "INSERT INTO reports (name, body) VALUES ('nightly', ?)", (body,))


def make_db(kind: str, tmp_path: Path, pg_databases: Any) -> Iterator[Db]:
    if on_postgres(kind):
        name = pg_databases.create(False)
        db = Db(kind, pg_databases.url(name))
    else:
        name = ""
        db = Db(kind, f"sqlite:///{tmp_path}/user.sqlite")
    setup = db.plain()
    setup.execute(SCHEMA)
    setup.execute(TableFence().sql("install", "sqlite"))
    try:
        yield db
    finally:
        db.close()
        if name:
            pg_databases.drop_later(name)


def on_postgres(kind: str) -> bool:
    return kind in ("psycopg", "psycopg2") or kind.endswith("-postgres")


@pytest.fixture(params=KINDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    """A database for each kind of connection the guard accepts."""
    kind = str(request.param)
    pg = request.getfixturevalue("pg_databases") if on_postgres(kind) else None
    yield from make_db(kind, tmp_path, pg)


@pytest.fixture
def db_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Db]]:
    """``db_of(kind)``: a database for one kind of connection, for tests about that kind."""
    made: list[Iterator[Db]] = []

    def make(kind: str) -> Db:
        pg = request.getfixturevalue("pg_databases") if on_postgres(kind) else None
        folder = tmp_path / f"{kind}-{len(made)}"
        folder.mkdir()
        made.append(make_db(kind, folder, pg))
        return next(made[-1])

    yield make
    for each in made:
        next(each, None)
