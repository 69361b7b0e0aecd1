"""The guard end to end, with leases from a real tenure server and a bare ``tenure.Client()``
as a reader of docs/fencing.md writes it: a SQLite table, and a PostgreSQL table through
SQLAlchemy's ``Connection`` and ORM ``Session`` on both of its PostgreSQL drivers (psycopg2 and
psycopg). Then a stale token, as a paused holder would send it, is refused on the same tables.
(docs/fencing.md's own walkthroughs are run by test_fencing_docs.py.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tenure
from procs import Serve
from tenure.fence import TableFence
from tenure.service.principals import Principals


@pytest.fixture
def tenure_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A tenure server; ``TENURE_URL`` and ``TENURE_TOKEN`` point a bare ``Client()`` at it."""
    url = f"sqlite:///{tmp_path}/tenure.sqlite"
    store = tenure.open_store(url)
    try:
        token = Principals(store).bootstrap("cron", "agent", ()).token
    finally:
        store.close()
    server = Serve(url)
    monkeypatch.setenv("TENURE_URL", server.url)
    monkeypatch.setenv("TENURE_TOKEN", token)
    monkeypatch.chdir(tmp_path)
    try:
        yield
    finally:
        server.kill()


def sqlite_walkthrough() -> None:
    import sqlite3

    import tenure
    from tenure.fence import TableFence

    fence = TableFence()
    db = sqlite3.connect("reports.sqlite", timeout=10)
    with db:
        db.execute("CREATE TABLE IF NOT EXISTS reports (name TEXT PRIMARY KEY, body TEXT)")
        fence.install(db)  # CREATE TABLE IF NOT EXISTS tenure_fence …

    with (
        tenure.Client() as client,  # TENURE_URL, TENURE_TOKEN
        client.lease("reports/nightly", ttl=30, task="cron:nightly") as lease,
    ):
        body = "rendered at " + lease.key  # your slow work; the lease heartbeats meanwhile
        with fence.transaction(db, "reports/nightly", lease.token):
            db.execute("INSERT OR REPLACE INTO reports VALUES ('nightly', ?)", (body,))
    db.close()


def sqlalchemy_walkthrough(url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session

    import tenure
    from tenure.fence import TableFence

    fence = TableFence()
    engine = create_engine(url)  # or +psycopg
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS reports (name TEXT PRIMARY KEY, body TEXT)"))
        conn.execute(text(fence.sql("install", "postgres")))  # or an Alembic migration, below

    with (
        tenure.Client() as client,
        client.lease("reports/nightly", ttl=30) as lease,
        engine.connect() as conn,
    ):
        with fence.transaction(conn, "reports/nightly", lease.token):
            conn.execute(
                text(
                    "INSERT INTO reports VALUES ('nightly', :body) "
                    "ON CONFLICT (name) DO UPDATE SET body = excluded.body"
                ),
                {"body": "rendered"},
            )

        with Session(engine) as session, fence.transaction(session, "reports/nightly", lease.token):
            session.execute(text("UPDATE reports SET body = 'again' WHERE name = 'nightly'"))
            # session.add(Report(...)) works too: the guard's commit flushes your objects
    engine.dispose()


def stale_write_is_refused(conn: Any) -> None:
    """A holder from before the walkthrough's lease (token 1 is older) cannot write."""
    fence = TableFence()
    with pytest.raises(tenure.StaleToken), fence.transaction(conn, "reports/nightly", 1):
        conn.execute("UPDATE reports SET body = 'stale' WHERE name = 'nightly'")


def test_the_sqlite_walkthrough(tenure_env: None, tmp_path: Path) -> None:
    sqlite_walkthrough()
    sqlite_walkthrough()  # a second run: a newer token
    conn = sqlite3.connect(tmp_path / "reports.sqlite")
    assert conn.execute("SELECT body FROM reports").fetchall() == [("rendered at reports/nightly",)]
    assert TableFence().current(conn, "reports/nightly") == 2
    conn.rollback()
    stale_write_is_refused(conn)
    assert conn.execute("SELECT body FROM reports").fetchall() == [("rendered at reports/nightly",)]
    conn.close()


def test_the_sqlalchemy_postgresql_walkthrough(tenure_env: None, pg_databases: Any) -> None:
    name = pg_databases.create(False)
    url = pg_databases.url(name)
    try:
        sqlalchemy_walkthrough(url.replace("postgresql://", "postgresql+psycopg2://", 1))
        sqlalchemy_walkthrough(url.replace("postgresql://", "postgresql+psycopg://", 1))
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT body FROM reports").fetchall() == [("again",)]
            assert TableFence().current(conn, "reports/nightly") == 2
            conn.rollback()
            stale_write_is_refused(conn)
            assert conn.execute("SELECT body FROM reports").fetchall() == [("again",)]
    finally:
        pg_databases.drop_later(name)
