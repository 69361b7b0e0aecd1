"""Schema migrations: numbered files, applied once, never re-applied, never downgraded."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any

import psycopg
import pytest

import tenure


def migration_files(backend: str) -> list[str]:
    folder = resources.files("tenure.store").joinpath("sql", backend, "migrations")
    return sorted(e.name for e in folder.iterdir() if re.fullmatch(r"\d{4}_\w+\.sql", e.name))


def sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    """Run one statement on the database behind ``url`` outside tenure."""
    if url.startswith("sqlite://"):
        conn = sqlite3.connect(url.removeprefix("sqlite://").removeprefix("/"))
        try:
            with conn:
                return conn.execute(statement).fetchall()
        finally:
            conn.close()
    with psycopg.connect(url, autocommit=True) as pg:
        cur = pg.execute(statement)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def test_schema_version_is_the_number_of_migration_files(make_store, backend: str) -> None:
    files = migration_files(backend)
    assert files and files[0] == "0001_init.sql"
    assert make_store().schema_version() == len(files)


def test_opening_a_blank_database_migrates_it(
    blank_url: Callable[[], str], make_store, backend: str
) -> None:
    url = blank_url()
    store = make_store(url=url)
    assert store.schema_version() == len(migration_files(backend))
    assert tenure.Service(store).acquire("alice", "k").token == 1


def test_reopening_does_not_migrate_again(
    store_url: str, make_store, clock: tenure.FakeClock
) -> None:
    applied = sql(store_url, "SELECT version, name, applied_at FROM tenure_schema ORDER BY 1")
    first = make_store()
    tenure.Service(first).acquire("alice", "k")
    first.close()
    clock.advance(60_000)
    second = make_store()
    assert sql(store_url, "SELECT version, name, applied_at FROM tenure_schema ORDER BY 1") == (
        applied
    )
    assert second.schema_version() == len(applied)
    assert tenure.Service(second).get("k").token == 1


def test_concurrent_first_opens_migrate_once(
    blank_url: Callable[[], str], make_store, backend: str, request: pytest.FixtureRequest
) -> None:
    url = blank_url()
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def open_it() -> None:
        barrier.wait()
        try:
            make_store(url=url)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    versions = [row[0] for row in sql(url, "SELECT version FROM tenure_schema ORDER BY 1")]
    assert versions == list(range(1, len(migration_files(backend)) + 1))


def test_a_database_with_a_newer_schema_is_refused(store_url: str, make_store) -> None:
    sql(store_url, "INSERT INTO tenure_schema VALUES (9999, 'from_the_future', 0)")
    with pytest.raises(RuntimeError, match="newer"):
        make_store()


def test_a_first_open_waits_for_a_concurrent_writer(
    blank_url: Callable[[], str], make_store, backend: str, request: pytest.FixtureRequest
) -> None:
    """Another process is writing to the new database when tenure first opens it."""
    url = blank_url()
    if url.startswith("sqlite://"):
        other: Any = sqlite3.connect(url.removeprefix("sqlite://").removeprefix("/"))
        other.isolation_level = None
        other.execute("BEGIN IMMEDIATE")
    else:
        other = psycopg.connect(url)  # not autocommit: the next statement opens a transaction
    other.execute("CREATE TABLE someone_elses (x integer)")
    opened: list[Any] = []

    def open_it() -> None:
        try:
            opened.append(make_store(url=url))
        except BaseException as exc:  # reported below
            opened.append(exc)

    thread = threading.Thread(target=open_it)
    thread.start()
    thread.join(0.3)
    other.execute("COMMIT")
    other.close()
    thread.join(30)
    assert len(opened) == 1
    assert not isinstance(opened[0], BaseException), repr(opened[0])
    assert opened[0].schema_version() == len(migration_files(backend))


def test_leases_and_op_ids_from_before_sessions_read_as_the_default_session(
    blank_url: Callable[[], str], make_store, backend: str, clock: tenure.FakeClock
) -> None:
    """A database written before sessions existed: its leases belong to session ``""``, and its
    op_ids keep answering their first write."""
    url = blank_url()
    folder = resources.files("tenure.store").joinpath("sql", backend, "migrations")
    files = migration_files(backend)
    sessions = files.index(next(f for f in files if f.endswith("_sessions.sql")))
    for version, name in enumerate(files[:sessions], start=1):
        script = folder.joinpath(name).read_text()
        if backend == "sqlite":
            conn = sqlite3.connect(url.removeprefix("sqlite://").removeprefix("/"))
            conn.executescript(script)
            conn.close()
        else:
            sql(url, script)
        sql(
            url,
            "CREATE TABLE IF NOT EXISTS tenure_schema "
            "(version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)",
        )
        sql(url, f"INSERT INTO tenure_schema VALUES ({version}, '{name[5:-4]}', 0)")
    now = clock.now_ms()
    sql(
        url,
        "INSERT INTO tenure_leases (key, token, holder, task, ttl_ms, acquired_at, renewed_at,"
        f" expires_at) VALUES ('k', 3, 'web', 'old', 30000, {now}, {now}, {now + 30_000})",
    )
    sql(
        url,
        "INSERT INTO tenure_fenced (key, token, value, version, updated_at)"
        " VALUES ('k', 3, '\"v\"', 1, 0)",
    )
    sql(
        url,
        "INSERT INTO tenure_fenced_ops (key, op_id, token, value, version)"
        " VALUES ('k', 'op-1', 3, '\"v\"', 1)",
    )
    service = tenure.Service(make_store(url=url))
    lease = service.get("k")
    assert (lease.holder, lease.session, lease.token, lease.state) == ("web", "", 3, "live")
    assert service.acquire("web", "k").token == 3  # the default session renews it
    with pytest.raises(tenure.LeaseHeld):
        service.acquire("web", "k", session="replica-2")
    again = service.write("web", "k", 3, "v", op_id="op-1")
    assert (again.duplicate, again.version) == (True, 1)
