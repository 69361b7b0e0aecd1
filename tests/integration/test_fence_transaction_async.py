"""``async with fence.atransaction(conn, key, token):`` on psycopg 3's ``AsyncConnection``,
asyncpg and aiosqlite, against a real PostgreSQL and real SQLite files."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg
import psycopg
import pytest
from _fence_drivers import KEY, SCHEMA, Db

import tenure
from tenure.fence import FenceMisuse, TableFence

fence = TableFence()
ENGINES: list[Any] = []
KINDS = ("psycopg-async", "asyncpg", "aiosqlite", "sqlalchemy-aiosqlite", "sqlalchemy-asyncpg")


@pytest.fixture(params=KINDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    kind = str(request.param)
    if kind.endswith("aiosqlite"):
        made = Db(kind, f"sqlite:///{tmp_path}/user.sqlite")
        name = ""
    else:
        pg = request.getfixturevalue("pg_databases")
        name = pg.create(False)
        made = Db(kind, pg.url(name))
    setup = made.plain()
    setup.execute(SCHEMA)
    setup.execute(fence.sql("install", "sqlite"))
    try:
        yield made
    finally:
        made.close()
        if name:
            request.getfixturevalue("pg_databases").drop_later(name)


async def connect(db: Db) -> Any:
    if db.kind.startswith("sqlalchemy"):
        from sqlalchemy.ext.asyncio import create_async_engine

        driver = db.kind.partition("-")[2]
        url = db.url.replace("sqlite://", f"sqlite+{driver}://", 1)
        engine = create_async_engine(url.replace("postgresql://", f"postgresql+{driver}://", 1))
        ENGINES.append(engine)
        return await engine.connect()
    if db.kind == "aiosqlite":
        return await aiosqlite.connect(db.url.removeprefix("sqlite:///"), timeout=10)
    if db.kind == "asyncpg":
        return await asyncpg.connect(db.url)
    return await psycopg.AsyncConnection.connect(db.url)


async def dispose() -> None:
    """Dispose of the SQLAlchemy engines the scenario made (after closing its connections)."""
    while ENGINES:
        await ENGINES.pop().dispose()


async def run(conn: Any, sql: str, *params: Any) -> None:
    if type(conn).__module__.startswith("sqlalchemy"):
        from sqlalchemy import text

        names = iter(range(len(params)))
        named = "".join(f":p{next(names)}" if c == "?" else c for c in sql)
        await conn.execute(text(named), {f"p{i}": v for i, v in enumerate(params)})
    elif isinstance(conn, aiosqlite.Connection):
        await conn.execute(sql, params)
    elif isinstance(conn, psycopg.AsyncConnection):
        await conn.execute(sql.replace("?", "%s"), params)
    else:
        numbered = iter(range(1, 10))
        await conn.execute("".join(f"${next(numbered)}" if c == "?" else c for c in sql), *params)


async def publish(conn: Any, body: str) -> None:
    await run(conn, "DELETE FROM reports WHERE name = 'nightly'")
    await run(conn, "INSERT INTO reports (name, body) VALUES ('nightly', ?)", body)


def scenario(db: Db, body: Any) -> Any:
    """Run ``body(conn)`` on a fresh connection of the kind, closed afterwards."""

    async def main() -> Any:
        conn = await connect(db)
        try:
            return await body(conn)
        finally:
            await conn.close()
            await dispose()

    return asyncio.run(main())


def test_the_admission_and_the_write_commit_together(db: Db) -> None:
    async def body(conn: Any) -> None:
        async with fence.atransaction(conn, KEY, 5) as inside:
            assert inside is conn
            await publish(conn, "five")
            assert db.current() is None
        async with fence.atransaction(conn, KEY, 9):
            await publish(conn, "nine")

    scenario(db, body)
    assert (db.current(), db.report()) == (9, "nine")


def test_a_stale_token_or_an_error_changes_nothing(db: Db) -> None:
    async def body(conn: Any) -> tenure.StaleToken:
        async with fence.atransaction(conn, KEY, 9):
            await publish(conn, "nine")
        with pytest.raises(RuntimeError):
            async with fence.atransaction(conn, KEY, 10):
                await publish(conn, "ten, half done")
                raise RuntimeError("render failed")
        with pytest.raises(tenure.StaleToken) as caught:
            async with fence.atransaction(conn, KEY, 8):
                await publish(conn, "eight")
        async with fence.atransaction(conn, KEY, 9):  # idle and usable again
            pass
        return caught.value

    stale = scenario(db, body)
    assert (stale.token, stale.current_token) == (8, 9)
    assert (db.current(), db.report()) == (9, "nine")


def test_a_connection_inside_a_transaction_is_refused(db: Db) -> None:
    async def body(conn: Any) -> FenceMisuse:
        if type(conn).__module__.startswith("sqlalchemy"):
            await run(conn, "SELECT 1")  # autobegin
        elif isinstance(conn, aiosqlite.Connection):
            await conn.execute("INSERT INTO reports VALUES ('other', 'x')")  # implicit BEGIN
        elif isinstance(conn, psycopg.AsyncConnection):
            await conn.execute("SELECT 1")  # implicit BEGIN
        else:
            await conn.transaction().start()
        with pytest.raises(FenceMisuse) as caught:
            async with fence.atransaction(conn, KEY, 5):
                await publish(conn, "never")
        return caught.value

    error = scenario(db, body)
    assert (error.state, error.field) == ("in_transaction", "conn")
    assert (db.current(), db.report()) == (None, None)


def test_an_older_token_waits_for_a_newer_open_transaction_and_is_refused(db: Db) -> None:
    async def main() -> object:
        newer, older = await connect(db), await connect(db)
        try:
            async with fence.atransaction(newer, KEY, 5):
                await publish(newer, "five")

            async def late() -> object:
                try:
                    async with fence.atransaction(older, KEY, 6):
                        await publish(older, "six, stale")
                    return "admitted"
                except tenure.TenureError as error:
                    return error

            async with fence.atransaction(newer, KEY, 7):
                waiting = asyncio.ensure_future(late())
                await asyncio.sleep(0.3)
                assert not waiting.done()
                await publish(newer, "seven")
            return await waiting
        finally:
            await newer.close()
            await older.close()
            await dispose()

    outcome = asyncio.run(main())
    assert isinstance(outcome, tenure.StaleToken) and outcome.current_token == 7
    assert (db.current(), db.report()) == (7, "seven")


def test_blocking_connections_are_told_to_use_transaction(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.sqlite")

    async def body() -> None:
        async with fence.atransaction(conn, KEY, 1):
            pass

    with pytest.raises(FenceMisuse) as caught:
        asyncio.run(body())
    conn.close()
    assert caught.value.state == "unsupported" and "fence.transaction" in str(caught.value)


async def commit_inside(conn: Any) -> None:
    if isinstance(conn, asyncpg.Connection):
        await conn.execute("COMMIT")  # asyncpg has no commit(): the raw statement
    else:
        await conn.commit()


def test_a_commit_inside_the_block_fails_loudly(db: Db) -> None:
    """aiosqlite refuses the commit itself and psycopg refuses it in its own transaction block
    (nothing lands); SQLAlchemy commits the first batch and refuses the next statement; asyncpg's
    raw COMMIT is found by the missing marker savepoint."""

    async def body(conn: Any) -> BaseException:
        with pytest.raises(Exception) as caught:
            async with fence.atransaction(conn, KEY, 5):
                await publish(conn, "first batch")
                await commit_inside(conn)
                await publish(conn, "second batch")
        return caught.value

    error = scenario(db, body)
    if db.kind in ("aiosqlite", "asyncpg"):
        assert isinstance(error, FenceMisuse) and error.state == "ended_inside", repr(error)
    if db.kind in ("aiosqlite", "psycopg-async"):
        assert db.report() is None and db.current() is None
    elif db.kind != "asyncpg":  # on asyncpg the statements after a raw COMMIT autocommit
        assert db.report() == "first batch"
