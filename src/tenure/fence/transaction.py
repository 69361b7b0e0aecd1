"""The guard that owns the transaction: ``with fence.transaction(conn, key, token):``.

It refuses a connection whose transaction it cannot own (:class:`tenure.FenceMisuse`,
nothing done), begins one itself (``BEGIN IMMEDIATE`` on SQLite), admits the token in the
fence table as the first statement, runs your block, and commits; any error rolls everything
back. A lost race with a concurrent transaction (a serialization failure, a deadlock, SQLite
locked past its timeout) becomes :class:`tenure.StaleToken` if a newer token was admitted
meanwhile, else :class:`tenure.FenceBusy` (nothing was written: run the block again).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, TypeVar

from tenure.errors import FenceBusy, TenureError
from tenure.fence._args import check_key, check_token, stale
from tenure.fence.adapters import async_driver_of, driver_of

if TYPE_CHECKING:
    from tenure.fence.drivers import Driver
    from tenure.fence.drivers_async import AsyncDriver
    from tenure.fence.table import TableFence

C = TypeVar("C")
_SQLSTATES = {"40001": "serialization_failure", "40P01": "deadlock"}
_SQLITE_BUSY = {5: "database_locked", 6: "database_locked"}  # SQLITE_BUSY, SQLITE_LOCKED


def race_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (or the driver error it wraps) is a lost race, or ``None`` if it is not."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        state = getattr(current, "sqlstate", None) or getattr(current, "pgcode", None)
        if isinstance(state, str) and state in _SQLSTATES:
            return _SQLSTATES[state]
        code = getattr(current, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in _SQLITE_BUSY:
            return _SQLITE_BUSY[code & 0xFF]
        if type(current).__name__ == "OperationalError" and "database is locked" in str(current):
            return "database_locked"
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return None


def busy(key: str, token: int, reason: str) -> FenceBusy:
    return FenceBusy(
        f"fence_busy: the transaction fenced by token {token} for {key!r} lost a race with a "
        f"concurrent transaction ({reason}) and was rolled back, so it wrote nothing. "
        "Run it again.",
        key=key,
        token=token,
        reason=reason,
    )


def lost(key: str, token: int, reason: str, current: int | None) -> TenureError:
    """The error for a lost race: stale if a newer token got in meanwhile, else busy."""
    if current is not None and current > token:
        return stale(key, token, current)
    return busy(key, token, reason)


@contextlib.contextmanager
def guard(fence: TableFence, conn: C, key: str, token: int) -> Iterator[C]:
    """See :meth:`TableFence.transaction`."""
    key, token = check_key(key), check_token(token)
    driver = driver_of(conn)
    driver.refuse()
    try:
        with driver.owned():
            admit(fence, driver, key, token)
            yield conn
    except Exception as exc:
        if (reason := race_reason(exc)) is None or isinstance(exc, TenureError):
            raise
        raise lost(key, token, reason, reread(fence, driver, key)) from exc


def admit(fence: TableFence, driver: Driver, key: str, token: int) -> None:
    row = driver.fetchone(*fence.statement("admit", key, token))
    if row is None:
        found = driver.fetchone(*fence.statement("current_tree", key))
        raise stale(key, token, None if found is None or found[0] is None else int(found[0]))


def current(fence: TableFence, driver: Driver, key: str) -> int | None:
    row = driver.fetchone(fence.sql("current", "sqlite"), (key,))
    return None if row is None else int(row[0])


def reread(fence: TableFence, driver: Driver, key: str) -> int | None:
    """The fence's token for ``key`` in a fresh transaction (``None`` if that fails too)."""
    try:
        with driver.owned(write=False):
            return current(fence, driver, key)
    except Exception:
        return None


@contextlib.asynccontextmanager
async def aguard(fence: TableFence, conn: C, key: str, token: int) -> AsyncIterator[C]:
    """See :meth:`TableFence.atransaction`."""
    key, token = check_key(key), check_token(token)
    driver = async_driver_of(conn)
    driver.refuse()
    try:
        async with driver.owned():
            await aadmit(fence, driver, key, token)
            yield conn
    except Exception as exc:
        if (reason := race_reason(exc)) is None or isinstance(exc, TenureError):
            raise
        raise lost(key, token, reason, await areread(fence, driver, key)) from exc


async def aadmit(fence: TableFence, driver: AsyncDriver, key: str, token: int) -> None:
    row = await driver.fetchone(*fence.statement("admit", key, token))
    if row is None:
        found = await driver.fetchone(*fence.statement("current_tree", key))
        raise stale(key, token, None if found is None or found[0] is None else int(found[0]))


async def acurrent(fence: TableFence, driver: AsyncDriver, key: str) -> int | None:
    row = await driver.fetchone(fence.sql("current", "sqlite"), (key,))
    return None if row is None else int(row[0])


async def areread(fence: TableFence, driver: AsyncDriver, key: str) -> int | None:
    try:
        async with driver.owned(write=False):
            return await acurrent(fence, driver, key)
    except Exception:
        return None
