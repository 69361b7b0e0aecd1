"""A table-backed fence for your own SQL database (SQLite or PostgreSQL).

``with fence.transaction(conn, key, token):`` (``async with fence.atransaction(...)`` for
asyncio drivers) owns the transaction of the guarded write: it begins it, admits the token,
runs your block and commits, and refuses connections whose transaction it cannot own.
:meth:`TableFence.admit` is the bare check for a transaction you manage yourself. Either way
the admission is one conditional upsert: it admits the token if it is the largest seen for the
key (or equal to it) and raises :class:`tenure.StaleToken` otherwise, changing nothing.
"""

from __future__ import annotations

import re
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from tenure.core.subtree import ancestors
from tenure.errors import InvalidRequest
from tenure.fence._args import (
    KeyPatterns,
    Keys,
    check_bound,
    check_key,
    check_pairs,
    check_table,
    check_token,
    key_patterns,
    stale,
)
from tenure.fence.drivers import Dialect
from tenure.fence.transaction import aguard, guard

C = TypeVar("C")
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@cache
def _queries() -> dict[str, str]:
    text = resources.files("tenure.fence").joinpath("fence.sql").read_text()
    parts = _NAME.split(text)
    return {n: b.strip().rstrip(";") for n, b in zip(parts[1::2], parts[2::2], strict=True)}


def dialect_of(conn: object) -> Dialect:
    """``sqlite`` for a :mod:`sqlite3` connection, ``postgres`` for a psycopg one."""
    module = type(conn).__module__
    if module.startswith("sqlite3"):
        return "sqlite"
    if module.startswith("psycopg"):
        return "postgres"
    raise InvalidRequest(
        f"tenure.fence works on sqlite3 and psycopg connections, not {type(conn).__name__}",
        field="conn",
    )


class TableFence:
    """The largest token admitted per key, kept in a table of your database: guard a write
    with :meth:`transaction` (or :meth:`atransaction`), or call :meth:`admit` inside a
    transaction of your own."""

    def __init__(
        self,
        table: str = "tenure_fence",
        *,
        lock_timeout: float | None = 30.0,
        keys: KeyPatterns = None,
    ) -> None:
        self.table = check_table(table)
        self.keys = key_patterns(keys)
        if lock_timeout is not None and (
            isinstance(lock_timeout, bool)
            or not isinstance(lock_timeout, int | float)
            or not 0 < lock_timeout <= 86_400
        ):
            raise InvalidRequest(
                "lock_timeout: seconds in (0, 86400], or None for no bound", field="lock_timeout"
            )
        #: how long :meth:`transaction` waits on PostgreSQL for a fence row another open
        #: transaction holds (``None``: no bound); then :class:`tenure.FenceBusy`
        self.lock_timeout = None if lock_timeout is None else float(lock_timeout)

    def sql(self, name: str, dialect: Dialect) -> str:
        """The named statement for ``dialect``, with the table and parameter marker in place."""
        text = _queries()[name].replace("{table}", self.table)
        return text.replace("?", "%s") if dialect == "postgres" else text

    def statement(
        self, name: str, key: str, token: int | None = None
    ) -> tuple[str, tuple[Any, ...]]:
        """``admit`` or ``current_tree`` for ``key`` with ``?`` markers, and its parameters:
        the key's row and the rows of the subtrees above it (``a/``, ``a/b/`` for ``a/b/c``)
        are read in the one statement."""
        keys = (key, *ancestors(key))
        text = self.sql(name, "sqlite").replace(
            "{keys}", ", ".join(["CAST(? AS TEXT)"] * len(keys))
        )
        if name == "admit":
            return text, (key, token, *keys, token)
        return text, keys

    def transaction(
        self, conn: C, key: Keys, token: int | None = None
    ) -> AbstractContextManager[C]:
        """Own a transaction on ``conn`` fenced by ``token`` for ``key``; yields ``conn``.

        Begins the transaction (``BEGIN IMMEDIATE`` on SQLite), admits the token as its first
        statement (:class:`tenure.StaleToken` if a newer one was admitted), runs the block and
        commits, or rolls back on any error. Several keys: ``transaction(conn, {"a": 7, "b":
        3})`` (or ``(key, token)`` pairs) admits each, in key order. Refuses, changing nothing,
        a connection already inside a transaction or savepoint, or one that commits every
        statement by itself; and a commit or rollback inside the block, rolling back what is
        left (:class:`tenure.FenceMisuse`). A lost race with a concurrent transaction, or a
        wait past ``lock_timeout`` for a row another transaction holds, is
        :class:`tenure.StaleToken` if a newer token got in, else :class:`tenure.FenceBusy`.
        Accepts :mod:`sqlite3`, psycopg 3, psycopg2, SQLAlchemy ``Connection`` and ``Session``
        and Django connections.
        """
        return guard(self, conn, self._bound(check_pairs(key, token)))

    def atransaction(
        self, conn: C, key: Keys, token: int | None = None
    ) -> AbstractAsyncContextManager[C]:
        """:meth:`transaction` for psycopg 3 ``AsyncConnection``, asyncpg and aiosqlite."""
        return aguard(self, conn, self._bound(check_pairs(key, token)))

    def _bound(self, pairs: list[tuple[str, int]]) -> list[tuple[str, int]]:
        for key, _ in pairs:
            check_bound(self.keys, key)
        return pairs

    def install(self, conn: Any) -> None:
        """Create the fence table if it is missing (inside the caller's transaction)."""
        conn.execute(self.sql("install", dialect_of(conn)))

    def admit(self, conn: Any, key: str, token: int) -> int:
        """Admit ``token`` for ``key`` or raise :class:`tenure.StaleToken`; returns ``token``."""
        key, token = check_bound(self.keys, check_key(key)), check_token(token)
        dialect = dialect_of(conn)
        row = conn.execute(*self._statement(dialect, "admit", key, token)).fetchone()
        if row is None:
            raise stale(key, token, self._tree(conn, dialect, key))
        return token

    def current(self, conn: Any, key: str) -> int | None:
        """The largest token admitted for ``key`` so far, or ``None``."""
        return self._current(conn, dialect_of(conn), check_key(key))

    def _statement(
        self, dialect: Dialect, name: str, key: str, token: int | None = None
    ) -> tuple[str, tuple[Any, ...]]:
        text, params = self.statement(name, key, token)
        return (text.replace("?", "%s") if dialect == "postgres" else text), params

    def _tree(self, conn: Any, dialect: Dialect, key: str) -> int | None:
        row = conn.execute(*self._statement(dialect, "current_tree", key)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _current(self, conn: Any, dialect: Dialect, key: str) -> int | None:
        row = conn.execute(self.sql("current", dialect), (key,)).fetchone()
        return None if row is None else int(row[0])

    async def install_async(self, conn: Any) -> None:
        """:meth:`install` on a psycopg ``AsyncConnection``."""
        await conn.execute(self.sql("install", "postgres"))

    async def admit_async(self, conn: Any, key: str, token: int) -> int:
        """:meth:`admit` on a psycopg ``AsyncConnection``."""
        key, token = check_bound(self.keys, check_key(key)), check_token(token)
        cur = await conn.execute(*self._statement("postgres", "admit", key, token))
        if await cur.fetchone() is None:
            cur = await conn.execute(*self._statement("postgres", "current_tree", key))
            row = await cur.fetchone()
            raise stale(key, token, None if row is None or row[0] is None else int(row[0]))
        return token

    async def current_async(self, conn: Any, key: str) -> int | None:
        """:meth:`current` on a psycopg ``AsyncConnection``."""
        cur = await conn.execute(self.sql("current", "postgres"), (check_key(key),))
        row = await cur.fetchone()
        return None if row is None else int(row[0])
