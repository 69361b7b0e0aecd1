"""``tenure.fence.TableFence`` inside real SQLite and PostgreSQL transactions."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

import tenure
from tenure.fence import TableFence

KEY = "reports/nightly"


@contextmanager
def transaction(conn: Any) -> Iterator[None]:
    """Commit on success, roll back on error (``with conn`` closes a psycopg connection)."""
    if isinstance(conn, sqlite3.Connection):
        with conn:
            yield
    else:
        with conn.transaction():
            yield


def connect(url: str) -> Any:
    if url.startswith("sqlite:///"):
        return sqlite3.connect(url.removeprefix("sqlite:///"), timeout=10, check_same_thread=False)
    return psycopg.connect(url)


@pytest.fixture
def db_url(blank_url: Callable[[], str]) -> Iterator[str]:
    """A new database of the backend holding the user's own ``reports`` table and the fence."""
    url = blank_url()
    conn = connect(url)
    with transaction(conn):
        conn.execute("CREATE TABLE reports (name TEXT PRIMARY KEY, body TEXT NOT NULL)")
        TableFence().install(conn)
        TableFence().install(conn)  # idempotent
    conn.close()
    yield url


@pytest.fixture
def conn(db_url: str) -> Iterator[Any]:
    c = connect(db_url)
    yield c
    c.close()


def publish(conn: Any, token: int, body: str, fence: TableFence | None = None) -> None:
    """The user's guarded write: admit the token, then write, in one transaction."""
    with transaction(conn):
        (fence or TableFence()).admit(conn, KEY, token)
        conn.execute("DELETE FROM reports WHERE name = 'nightly'")
        conn.execute(
            "INSERT INTO reports (name, body) VALUES ('nightly', "
            + ("?" if isinstance(conn, sqlite3.Connection) else "%s")
            + ")",
            (body,),
        )


def report(conn: Any) -> str | None:
    row = conn.execute("SELECT body FROM reports WHERE name = 'nightly'").fetchone()
    conn.commit()
    return None if row is None else str(row[0])


def current(conn: Any, fence: TableFence | None = None) -> int | None:
    found = (fence or TableFence()).current(conn, KEY)
    conn.commit()
    return found


def test_first_token_is_admitted_and_recorded(conn: Any) -> None:
    assert current(conn) is None
    publish(conn, 5, "five")
    assert current(conn) == 5
    assert report(conn) == "five"


def test_equal_and_larger_tokens_are_admitted(conn: Any) -> None:
    publish(conn, 5, "five")
    publish(conn, 5, "five again")  # the same holder writes twice
    publish(conn, 9, "nine")
    assert current(conn) == 9
    assert report(conn) == "nine"


def test_stale_token_is_refused_and_the_transaction_changes_nothing(conn: Any) -> None:
    publish(conn, 9, "nine")
    with pytest.raises(tenure.StaleToken) as caught:
        publish(conn, 8, "eight, late")
    assert (caught.value.token, caught.value.current_token, caught.value.key) == (8, 9, KEY)
    assert caught.value.code == "stale_token" and caught.value.status == 409
    assert current(conn) == 9
    assert report(conn) == "nine"


def test_keys_are_fenced_independently(conn: Any) -> None:
    fence = TableFence()
    with transaction(conn):
        fence.admit(conn, "a", 100)
        fence.admit(conn, "b", 3)
    assert (fence.current(conn, "a"), fence.current(conn, "b")) == (100, 3)


def test_table_name_is_configurable(conn: Any) -> None:
    fence = TableFence("my_fence")
    with transaction(conn):
        fence.install(conn)
    publish(conn, 4, "four", fence)
    assert current(conn, fence) == 4
    assert current(conn) is None  # the default table is untouched


def test_tokens_from_a_real_tenure_service(conn: Any, service: tenure.Service, clock: Any) -> None:
    """A holder that stalled past its TTL, then wakes up, cannot overwrite its successor."""
    old = service.acquire("worker-a", KEY, ttl_ms=1_000)
    clock.advance(2_000)
    new = service.acquire("worker-b", KEY, ttl_ms=1_000)
    assert new.token > old.token
    publish(conn, new.token, "by b")
    with pytest.raises(tenure.StaleToken):
        publish(conn, old.token, "by a, who was paused")
    assert report(conn) == "by b"


@pytest.mark.parametrize(
    ("key", "token", "field"),
    [
        ("", 1, "key"),
        (None, 1, "key"),
        ("a\x00b", 1, "key"),
        (KEY, 0, "token"),
        (KEY, -3, "token"),
        (KEY, True, "token"),
        (KEY, "7", "token"),
        (KEY, 2**63, "token"),
        (KEY, 1.0, "token"),
    ],
)
def test_bad_arguments_are_refused_before_touching_the_database(
    conn: Any, key: Any, token: Any, field: str
) -> None:
    publish(conn, 5, "five")
    with pytest.raises(tenure.InvalidRequest) as caught:
        publish(conn, token, "bad", None) if key == KEY else TableFence().admit(conn, key, token)
    assert caught.value.field == field
    conn.rollback()
    assert current(conn) == 5 and report(conn) == "five"


@pytest.mark.parametrize("table", ["", "1abc", "a;drop table x", "a b", "x.y.z", 't"', "a" * 64])
def test_bad_table_names_are_refused(table: str) -> None:
    with pytest.raises(tenure.InvalidRequest) as caught:
        TableFence(table)
    assert caught.value.field == "table"


def test_other_connection_kinds_are_refused() -> None:
    with pytest.raises(tenure.InvalidRequest) as caught:
        TableFence().admit(object(), KEY, 1)
    assert caught.value.field == "conn"


def test_an_older_token_waiting_on_a_newer_one_is_refused_when_it_commits(db_url: str) -> None:
    """B (newer) has admitted but not committed; A (older) must wait for B and then be refused,
    never slip in between: the check and the write are one atomic step per transaction."""
    b, a = connect(db_url), connect(db_url)
    try:
        publish(b, 5, "five")  # the row exists
        TableFence().admit(b, KEY, 7)  # B's transaction is open and holds the key
        outcome: list[object] = []

        def older() -> None:
            try:
                publish(a, 6, "six, stale")
                outcome.append("admitted")
            except tenure.TenureError as error:
                outcome.append(error)

        thread = threading.Thread(target=older)
        thread.start()
        time.sleep(0.3)
        assert outcome == []  # A waits for B's transaction
        b.execute("UPDATE reports SET body = 'seven' WHERE name = 'nightly'")
        b.commit()
        thread.join(15)
        assert len(outcome) == 1 and isinstance(outcome[0], tenure.StaleToken)
        assert outcome[0].current_token == 7
        assert report(a) == "seven"
    finally:
        a.close()
        b.close()


def test_async_psycopg_connection(pg_databases: Any) -> None:
    name = pg_databases.create(False)
    url = pg_databases.url(name)

    async def scenario() -> tuple[int | None, int | None]:
        fence = TableFence()
        async with await psycopg.AsyncConnection.connect(url) as aconn:
            await fence.install_async(aconn)
            await fence.admit_async(aconn, KEY, 11)
            await aconn.commit()
            with pytest.raises(tenure.StaleToken) as caught:
                await fence.admit_async(aconn, KEY, 10)
            await aconn.rollback()
            return caught.value.current_token, await fence.current_async(aconn, KEY)

    try:
        assert asyncio.run(scenario()) == (11, 11)
    finally:
        pg_databases.drop_later(name)
