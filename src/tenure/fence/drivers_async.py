"""Adapters that let :meth:`TableFence.atransaction` own a transaction on each asyncio driver
it accepts: psycopg 3's ``AsyncConnection``, asyncpg, aiosqlite and SQLAlchemy's
``AsyncConnection``. Like the blocking ones, recognised by their class, never imported here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from tenure.fence.drivers import (
    Adapter,
    Dialect,
    Psycopg,
    Row,
    SQLAlchemyConnection,
    check_idle,
    marks,
    named,
    no_transaction_statements,
    refusals_named,
)


class AsyncDriver(Protocol):
    """An asyncio connection whose transaction the fence can own."""

    name: str
    dialect: Dialect

    def refuse(self) -> None: ...

    def owned(self, write: bool = True) -> AbstractAsyncContextManager[None]: ...

    async def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row: ...

    async def execute(self, sql: str) -> None: ...

    def sealed(self) -> AbstractAsyncContextManager[None]: ...


@contextlib.asynccontextmanager
async def _unsealed() -> AsyncIterator[None]:
    yield


class AsyncUnsealed:
    """An asyncio driver whose commit inside the block the fence cannot refuse as it happens
    (the marker savepoint finds it before the fence's commit)."""

    def sealed(self) -> AbstractAsyncContextManager[None]:
        return _unsealed()


class SQLAlchemyAsyncConnection(AsyncUnsealed):
    """SQLAlchemy ``AsyncConnection``: ``begin()``, and ``BEGIN IMMEDIATE`` on SQLite."""

    name = "sqlalchemy"

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.sync = SQLAlchemyConnection(conn.sync_connection)
        self.dialect = self.sync.dialect

    def refuse(self) -> None:
        self.sync.refuse()

    @contextlib.asynccontextmanager
    async def owned(self, write: bool = True) -> AsyncIterator[None]:
        async with self.conn.begin():
            if self.dialect == "sqlite" and write and not self._driver_in_transaction():
                await self.conn.exec_driver_sql("BEGIN IMMEDIATE")
            yield

    def _driver_in_transaction(self) -> bool:
        return bool(self.conn.sync_connection.connection.driver_connection.in_transaction)

    async def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        from sqlalchemy import text

        result = await self.conn.execute(text(marks(sql, "named")), named(params))
        row = result.fetchone()
        return None if row is None else tuple(row)

    async def execute(self, sql: str) -> None:
        await self.conn.exec_driver_sql(sql)


class AsyncPsycopg(Adapter, AsyncUnsealed):
    """psycopg 3 ``AsyncConnection``: its own outermost ``transaction()`` block."""

    name = "psycopg"
    dialect: Dialect = "postgres"

    def refuse(self) -> None:
        Psycopg(self.conn).refuse()

    def owned(self, write: bool = True) -> AbstractAsyncContextManager[None]:
        return self.conn.transaction()  # type: ignore[no-any-return]

    async def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        cur = await self.conn.execute(marks(sql, "format"), params)
        row = await cur.fetchone()
        return None if row is None else tuple(row)

    async def execute(self, sql: str) -> None:
        await self.conn.execute(sql)


class Asyncpg(AsyncPsycopg):
    """asyncpg ``Connection`` (or a pool's proxy of one): its ``transaction()`` block."""

    name = "asyncpg"

    def refuse(self) -> None:
        check_idle(self.name, self.conn.is_closed(), self.conn.is_in_transaction)

    async def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        row = await self.conn.fetchrow(marks(sql, "dollar"), *params)
        return None if row is None else tuple(row)


class Aiosqlite(Adapter):
    """aiosqlite ``Connection``: ``BEGIN IMMEDIATE`` as with :mod:`sqlite3`."""

    name = "aiosqlite"
    dialect: Dialect = "sqlite"

    def refuse(self) -> None:
        check_idle(self.name, False, lambda: bool(self.conn.in_transaction))

    @contextlib.asynccontextmanager
    async def owned(self, write: bool = True) -> AsyncIterator[None]:
        await self.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                await self.conn.execute("ROLLBACK")
            raise
        try:
            await self.conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                await self.conn.execute("ROLLBACK")
            raise

    async def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        async with self.conn.execute(sql, params) as cur:
            row = await cur.fetchone()
        return None if row is None else tuple(row)

    async def execute(self, sql: str) -> None:
        await self.conn.execute(sql)

    @contextlib.asynccontextmanager
    async def sealed(self) -> AsyncIterator[None]:
        await self.conn.set_authorizer(no_transaction_statements)
        try:
            with refusals_named(self.name):
                yield
        finally:
            await self.conn.set_authorizer(None)


ASYNC: dict[tuple[str, str], Callable[[Any], AsyncDriver]] = {
    ("psycopg", "AsyncConnection"): AsyncPsycopg,
    ("asyncpg", "Connection"): Asyncpg,
    ("asyncpg", "PoolConnectionProxy"): Asyncpg,
    ("aiosqlite", "Connection"): Aiosqlite,
    ("sqlalchemy", "AsyncConnection"): SQLAlchemyAsyncConnection,
}
