"""``with fence.transaction(conn, key, token):`` on every blocking driver it accepts, on real
SQLite files and a real PostgreSQL: it owns the transaction, commits the admission with the
write, and refuses the connections whose transaction it cannot own."""

# ruff: noqa: F811  (the ``db`` and ``db_of`` fixtures are imported, then asked for by name)

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from _fence_drivers import KEY, Db, db, db_of, publish, run  # noqa: F401

import tenure
from tenure.fence import FenceBusy, FenceMisuse, TableFence

fence = TableFence()


def test_the_admission_and_the_write_commit_together(db: Db) -> None:
    conn = db.connect()
    with fence.transaction(conn, KEY, 5) as inside:
        assert inside is conn
        publish(conn, "five")
        assert db.current() is None  # not committed yet: others do not see it
    assert (db.current(), db.report()) == (5, "five")
    with fence.transaction(conn, KEY, 5):  # the same holder writes again
        publish(conn, "five again")
    with fence.transaction(conn, KEY, 9):
        publish(conn, "nine")
    assert (db.current(), db.report()) == (9, "nine")


def test_a_stale_token_is_refused_before_the_block_and_changes_nothing(db: Db) -> None:
    conn = db.connect()
    with fence.transaction(conn, KEY, 9):
        publish(conn, "nine")
    ran = []
    with pytest.raises(tenure.StaleToken) as caught, fence.transaction(conn, KEY, 8):
        ran.append(True)
    assert not ran
    assert (caught.value.key, caught.value.token, caught.value.current_token) == (KEY, 8, 9)
    assert (db.current(), db.report()) == (9, "nine")
    with fence.transaction(conn, KEY, 10):  # the connection is idle again and usable
        publish(conn, "ten")
    assert (db.current(), db.report()) == (10, "ten")


def test_an_error_in_the_block_rolls_back_the_admission_too(db: Db) -> None:
    conn = db.connect()
    with fence.transaction(conn, KEY, 3):
        publish(conn, "three")
    with pytest.raises(RuntimeError, match="render failed"), fence.transaction(conn, KEY, 4):
        publish(conn, "half of four")
        raise RuntimeError("render failed")
    assert (db.current(), db.report()) == (3, "three")


def enter_a_transaction(db: Db, conn: Any) -> None:
    """What users do before calling the guard: run a statement (or open a transaction)."""
    if db.kind.startswith(("sqlalchemy", "session")):
        run(conn, "SELECT 1")  # autobegin
    elif db.kind == "sqlite3":
        run(conn, "INSERT INTO reports VALUES ('other', 'x')")  # sqlite3 begins before DML
    else:
        run(conn, "SELECT 1")  # psycopg and psycopg2 begin before any statement


def test_a_connection_already_inside_a_transaction_is_refused(db: Db) -> None:
    conn = db.connect()
    enter_a_transaction(db, conn)
    with pytest.raises(FenceMisuse) as caught, fence.transaction(conn, KEY, 5):
        publish(conn, "never")
    assert (caught.value.state, caught.value.field) == ("in_transaction", "conn")
    assert caught.value.code == "fence_misuse" and isinstance(caught.value, ValueError)
    assert str(caught.value).startswith("conn: ") and "Commit or roll back first" in str(
        caught.value
    )
    conn.rollback()
    assert (db.current(), db.report()) == (None, None)


def test_an_open_savepoint_is_refused(db: Db) -> None:
    conn = db.connect()
    if db.kind == "sqlite3":
        conn.execute("SAVEPOINT outer_work")
    elif db.kind == "psycopg":
        conn.autocommit = True
        block = conn.transaction()
        block.__enter__()
    elif db.kind == "psycopg2":
        conn.autocommit = True
        run(conn, "BEGIN")
    elif db.kind.startswith("sqlalchemy"):
        conn.begin()
        conn.begin_nested()
    else:
        conn.begin_nested()
    with pytest.raises(FenceMisuse) as caught, fence.transaction(conn, KEY, 5):
        publish(conn, "never")
    assert caught.value.state == "in_transaction"
    assert (db.current(), db.report()) == (None, None)


def test_the_old_admit_in_a_psycopg_connection_that_ran_a_statement_loses_the_write(
    db_of: Callable[[str], Db],
) -> None:
    """The footgun the guard refuses: the block becomes a savepoint and is lost on close."""
    db = db_of("psycopg")
    conn = db.connect()
    run(conn, "SELECT 1")
    with conn.transaction():  # a savepoint inside the implicit transaction
        fence.admit(conn, KEY, 5)
        publish(conn, "five")
    conn.close()
    assert (db.current(), db.report()) == (None, None)  # the write was lost
    conn = db.connect()
    run(conn, "SELECT 1")
    with pytest.raises(FenceMisuse), fence.transaction(conn, KEY, 5):
        publish(conn, "five")


def test_autocommit_connections_get_a_transaction_of_their_own(db: Db) -> None:
    """sqlite3 ``isolation_level=None`` and psycopg/psycopg2 ``autocommit`` commit each
    statement alone; the guard begins a real transaction on them, so an error in the block
    still rolls the admission back. SQLAlchemy's AUTOCOMMIT isolation on PostgreSQL makes its
    own commit a no-op, so the guard could not commit what it began: refused."""
    options: dict[str, Any] = {
        "sqlite3": {"isolation_level": None},
        "psycopg": {"autocommit": True},
        "psycopg2": {"autocommit": True},
    }.get(db.kind, {"isolation_level": "AUTOCOMMIT"})
    conn = db.connect(**options)
    if db.kind.endswith("-postgres"):
        with pytest.raises(FenceMisuse) as caught, fence.transaction(conn, KEY, 5):
            publish(conn, "never")
        assert caught.value.state == "autocommit"
        assert (db.current(), db.report()) == (None, None)
        return
    with pytest.raises(RuntimeError), fence.transaction(conn, KEY, 5):
        publish(conn, "five")
        raise RuntimeError("after the write, before the commit")
    assert (db.current(), db.report()) == (None, None)
    with fence.transaction(conn, KEY, 5):
        publish(conn, "five")
    assert (db.current(), db.report()) == (5, "five")


def test_the_old_admit_on_an_autocommit_sqlite_connection_commits_the_check_alone(
    db_of: Callable[[str], Db],
) -> None:
    db = db_of("sqlite3")
    conn = db.connect(isolation_level=None)
    with pytest.raises(RuntimeError), conn:
        fence.admit(conn, KEY, 5)
        raise RuntimeError("the write failed")
    assert db.current() == 5  # admitted without the write: the old API's footgun


def test_psycopg2_works_where_the_old_admit_crashed(db_of: Callable[[str], Db]) -> None:
    db = db_of("psycopg2")
    conn = db.connect()
    with pytest.raises(AttributeError):
        fence.admit(conn, KEY, 5)  # psycopg2 connections have no execute()
    conn.rollback()
    with fence.transaction(conn, KEY, 5):
        publish(conn, "five")
    assert (db.current(), db.report()) == (5, "five")


def test_an_older_token_waits_for_a_newer_open_transaction_and_is_refused(db: Db) -> None:
    newer, older = db.connect(), db.connect()
    with fence.transaction(newer, KEY, 5):
        publish(newer, "five")
    outcome: list[object] = []

    def late_writer() -> None:
        try:
            with fence.transaction(older, KEY, 6):
                publish(older, "six, stale")
            outcome.append("admitted")
        except tenure.TenureError as error:
            outcome.append(error)

    thread = threading.Thread(target=late_writer)
    with fence.transaction(newer, KEY, 7):
        thread.start()
        time.sleep(0.3)
        assert outcome == []  # it waits for the newer transaction
        publish(newer, "seven")
    thread.join(20)
    assert len(outcome) == 1 and isinstance(outcome[0], tenure.StaleToken), outcome
    assert outcome[0].current_token == 7
    assert (db.current(), db.report()) == (7, "seven")


def isolate(conn: Any, level: str) -> None:
    """Put ``conn`` (psycopg, psycopg2 or SQLAlchemy) under isolation ``level``."""
    if isinstance(conn, psycopg.Connection):
        conn.isolation_level = psycopg.IsolationLevel[level.replace(" ", "_")]
    elif type(conn).__module__.startswith("psycopg2"):
        conn.set_session(isolation_level=level)
    else:
        conn.execution_options(isolation_level=level)


def wait_until_blocked(db: Db) -> None:
    """Until another session of the database waits on a lock (bounded)."""
    look = db.plain()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        waiting = look.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()[0]
        if waiting:
            return
        time.sleep(0.02)
    raise AssertionError("the second transaction never waited on the fence row")


@pytest.mark.parametrize("kind", ["psycopg", "psycopg2", "sqlalchemy-postgres"])
@pytest.mark.parametrize("level", ["REPEATABLE READ", "SERIALIZABLE"])
@pytest.mark.parametrize(("waiting", "expected"), [(6, "stale"), (8, "busy")])
def test_serialization_failures_become_stale_token_or_fence_busy(
    db_of: Callable[[str], Db], kind: str, level: str, waiting: int, expected: str
) -> None:
    """Under REPEATABLE READ or SERIALIZABLE, a transaction that waited on the fence row is
    aborted by PostgreSQL when the other commits. The old API surfaced that as the driver's
    SerializationFailure; the guard says what it means: stale if the other token was newer,
    else busy (nothing written, run it again)."""
    db = db_of(kind)
    holder, waiter = db.connect(), db.connect()
    isolate(waiter, level)
    with fence.transaction(holder, KEY, 5):
        publish(holder, "five")
    outcome: list[object] = []

    def wait_then_write() -> None:
        try:
            with fence.transaction(waiter, KEY, waiting):
                publish(waiter, "waited")
            outcome.append("admitted")
        except tenure.TenureError as error:
            outcome.append(error)

    thread = threading.Thread(target=wait_then_write)
    with fence.transaction(holder, KEY, 7):
        thread.start()
        wait_until_blocked(db)
        publish(holder, "seven")
    thread.join(20)
    assert len(outcome) == 1, outcome
    error = outcome[0]
    if expected == "stale":
        assert isinstance(error, tenure.StaleToken) and error.current_token == 7
    else:
        assert isinstance(error, FenceBusy) and error.reason == "serialization_failure"
        assert error.token == 8 and "could not serialize" in str(error.__cause__)
    assert (db.current(), db.report()) == (7, "seven")
    with fence.transaction(waiter, KEY, 8):  # running it again works
        publish(waiter, "eight")
    assert (db.current(), db.report()) == (8, "eight")


def test_sqlite_locked_past_its_timeout_is_fence_busy(db_of: Callable[[str], Db]) -> None:
    db = db_of("sqlite3")
    holder, waiter = db.connect(), db.connect(timeout=0.2)
    with fence.transaction(holder, KEY, 5):
        publish(holder, "five")
        with pytest.raises(FenceBusy) as caught, fence.transaction(waiter, KEY, 6):
            publish(waiter, "six")
    assert (caught.value.reason, caught.value.token, caught.value.key) == (
        "database_locked",
        6,
        KEY,
    )
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert not waiter.in_transaction
    with fence.transaction(waiter, KEY, 6):
        publish(waiter, "six")
    assert (db.current(), db.report()) == (6, "six")


def test_keys_and_tables_are_separate(db: Db) -> None:
    conn = db.connect()
    mine = TableFence("my_fence")
    run(db.plain(), mine.sql("install", "sqlite"))
    with fence.transaction(conn, "a", 100):
        pass
    with mine.transaction(conn, KEY, 3):
        publish(conn, "three")
    assert (db.current(), db.current("my_fence")) == (None, 3)
    with fence.transaction(conn, KEY, 1):
        publish(conn, "one")
    assert db.report() == "one"


def test_bad_arguments_are_refused_before_the_connection_is_touched(db: Db) -> None:
    conn = db.connect()
    for key, token, name in [("", 1, "key"), (KEY, 0, "token"), (KEY, True, "token")]:
        with pytest.raises(tenure.InvalidRequest) as caught, fence.transaction(conn, key, token):
            pass
        assert caught.value.field == name
    with fence.transaction(conn, KEY, 1):  # still idle
        publish(conn, "one")


def test_unknown_and_async_connections_are_refused_with_what_to_use() -> None:
    with pytest.raises(FenceMisuse) as caught, fence.transaction(object(), KEY, 1):
        pass
    assert caught.value.state == "unsupported" and "docs/fencing.md" in str(caught.value)


async def _async_refused(url: str) -> FenceMisuse:
    aconn = await psycopg.AsyncConnection.connect(url)
    try:
        with pytest.raises(FenceMisuse) as caught, fence.transaction(aconn, KEY, 1):
            pass
        return caught.value
    finally:
        await aconn.close()


def test_an_async_connection_in_the_blocking_guard_is_told_to_use_atransaction(
    pg_databases: Any,
) -> None:
    import asyncio

    name = pg_databases.create(False)
    try:
        error = asyncio.run(_async_refused(pg_databases.url(name)))
    finally:
        pg_databases.drop_later(name)
    assert error.state == "unsupported" and "fence.atransaction" in str(error)


@pytest.mark.parametrize("kind", ["psycopg", "sqlalchemy-postgres"])
def test_a_deadlock_between_two_guarded_transactions_is_fence_busy(
    db_of: Callable[[str], Db], kind: str
) -> None:
    """Two holders of different keys update the same two rows in opposite orders: PostgreSQL
    aborts one of them. That one is ``FenceBusy`` (``deadlock``), rolled back with its
    admission; the other commits."""
    db = db_of(kind)
    setup = db.plain()
    setup.execute("INSERT INTO reports VALUES ('r1', '-'), ('r2', '-')")
    both_hold_one = threading.Barrier(2, timeout=20)
    outcome: dict[str, object] = {}

    def holder(key: str, first: str, second: str) -> None:
        conn = db.connect()
        try:
            with fence.transaction(conn, key, 1):
                run(conn, "UPDATE reports SET body = ? WHERE name = ?", (key, first))
                both_hold_one.wait()
                run(conn, "UPDATE reports SET body = ? WHERE name = ?", (key, second))
            outcome[key] = "committed"
        except tenure.TenureError as error:
            outcome[key] = error

    threads = [
        threading.Thread(target=holder, args=("a", "r1", "r2")),
        threading.Thread(target=holder, args=("b", "r2", "r1")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    busy = [(k, e) for k, e in outcome.items() if isinstance(e, FenceBusy)]
    assert len(busy) == 1 and len(outcome) == 2, outcome
    loser, error = busy[0]
    winner = "b" if loser == "a" else "a"
    assert outcome[winner] == "committed"
    assert (error.reason, error.token, error.key) == ("deadlock", 1, loser)
    rows = setup.execute("SELECT body FROM reports WHERE name IN ('r1', 'r2')").fetchall()
    assert rows == [(winner,), (winner,)]
    fenced = setup.execute("SELECT key FROM tenure_fence").fetchall()
    assert fenced == [(winner,)]  # the loser's admission was rolled back with its writes
