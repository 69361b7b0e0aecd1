"""The store sorts its drivers' errors in one place (``tenure.store.errors``): real databases
that cannot be reached, or used, or that a statement misuses; no error is made up here.

``down``: the database cannot be reached or used now (the server answers ``503``), else a bug
(``500``); ``sent``: the call may have reached the database, so a write may have happened (a
client must not assume it did not).
"""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import psycopg_pool

import tenure
from tenure.errors import Unavailable
from tenure.server.runtime.executor import GroupExecutor, PgGroupExecutor, make_executor
from tenure.store.errors import failure, unreachable
from tenure.store.postgres.store import PostgresStore

if TYPE_CHECKING:
    from conftest import PgDatabases


def _closed_port_url() -> str:
    """A PostgreSQL URL nobody listens on (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"postgresql://tenure@127.0.0.1:{port}/tenure?connect_timeout=2"


def _raised(run: Callable[[], object]) -> Exception:
    try:
        run()
    except Exception as exc:
        return exc
    raise AssertionError("it did not fail")


def test_a_refused_postgresql_connection_is_down_and_may_have_been_sent() -> None:
    found = failure(_raised(lambda: psycopg.connect(_closed_port_url())))
    assert found is not None and found.kind == "OperationalError"
    assert (found.down, found.sent) == (True, True)


def test_a_pool_without_a_connection_is_down_and_was_not_sent() -> None:
    pool = psycopg_pool.ConnectionPool(_closed_port_url(), min_size=1, open=False)
    pool.open(wait=False)
    try:
        exc = _raised(lambda: pool.getconn(timeout=0.5))
    finally:
        pool.close()
    found = failure(exc)
    assert isinstance(exc, psycopg_pool.PoolTimeout) and found is not None
    assert (found.down, found.sent) == (True, False)


def test_a_sqlite_file_that_cannot_be_opened_is_down(tmp_path: Path) -> None:
    exc = _raised(lambda: sqlite3.connect(tmp_path / "no-such-dir" / "t.db").execute("SELECT 1"))
    found = failure(exc)
    assert found is not None and (found.down, found.sent) == (True, True)


def test_a_statement_that_is_a_bug_is_not_an_outage(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.db")
    found = failure(_raised(lambda: conn.execute("SELECT * FROM no_such_table")))
    conn.close()
    assert found is not None and not found.down
    assert failure(ValueError("not the database's")) is None
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    assert failure(_raised(lambda: conn.execute("INSERT INTO t VALUES (1)"))) is None  # integrity


def test_a_postgresql_session_ended_by_the_server_is_down(pg_server_url: str) -> None:
    """An administrator's shutdown of the connection (``pg_terminate_backend``): the next
    statement fails with an ``OperationalError``; a missing table is a bug (not one)."""
    with psycopg.connect(pg_server_url, autocommit=True) as victim:
        missing = failure(_raised(lambda: victim.execute("SELECT * FROM no_such_table")))
        pid = victim.info.backend_pid
        with psycopg.connect(pg_server_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        ended = failure(_raised(lambda: victim.execute("SELECT 1")))
    assert missing is None  # UndefinedTable: a ProgrammingError, not a database that is down
    assert ended is not None and (ended.down, ended.sent) == (True, True)


def test_a_group_that_lost_its_connection_is_told_from_a_call_that_failed(
    pg_databases: PgDatabases,
) -> None:
    """``unreachable``: the group commit of a server lost its database (the connection was
    ended under it), not because of one of its calls (a bug in a statement)."""
    name = pg_databases.create()
    store = PostgresStore(pg_databases.url(name))

    def end_own_session() -> None:
        with store.group(["k"]), store.pool.connection() as other:
            other.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE pid <> pg_backend_pid() AND datname = current_database() "
                          "AND state = 'idle in transaction'")  # fmt: skip

    try:
        lost = _raised(end_own_session)
        with store.pool.connection() as conn:
            bug = _raised(lambda: conn.execute("SELECT * FROM no_such_table"))
    finally:
        store.close()
        pg_databases.drop_later(name)
    # The group's COMMIT went unanswered on a connection that is gone: its fate is unknown to
    # the server (the backend may have died before or after committing), and it says so.
    assert isinstance(lost, Unavailable) and lost.outcome == "unknown"
    cause = lost.__cause__
    assert isinstance(cause, psycopg.OperationalError)
    wrapped = RuntimeError("the group failed")
    wrapped.__cause__ = lost
    assert unreachable(lost) is cause and unreachable(wrapped) is cause
    assert unreachable(bug) is None


def test_the_server_picks_its_executor_from_the_store(
    make_store: Callable[..., tenure.Store], backend: str
) -> None:
    service = tenure.Service(make_store(clock=None))
    executor = make_executor(service)
    try:
        expected = GroupExecutor if backend == "sqlite" else PgGroupExecutor
        assert type(executor) is expected
    finally:
        executor.close()
