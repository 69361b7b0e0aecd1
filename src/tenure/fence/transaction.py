"""The guard that owns the transaction: ``with fence.transaction(conn, key, token):``.

It refuses a connection whose transaction it cannot own (:class:`tenure.FenceMisuse`,
nothing done), begins one itself (``BEGIN IMMEDIATE`` on SQLite), admits the token(s) in the
fence table as the first statements (several keys in key order, so two such transactions
cannot deadlock; on PostgreSQL with ``lock_timeout`` bounding the wait for a row another
transaction holds), opens a marker savepoint, runs your block, releases the marker and
commits; any error rolls everything back. A commit or rollback inside the block is refused
(sqlite3 and aiosqlite refuse the statement itself) or, having ended the fence's transaction,
found by the missing marker: :class:`tenure.FenceMisuse` and a rollback of what is left. A lost
race with a concurrent transaction (a serialization failure, a deadlock, a lock wait past
``lock_timeout``, SQLite locked past its timeout) becomes :class:`tenure.StaleToken` if a
newer token was admitted meanwhile, else :class:`tenure.FenceBusy` (nothing was written).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from tenure.errors import FenceBusy, FenceMisuse, TenureError
from tenure.fence._args import Pairs, stale
from tenure.fence.adapters import async_driver_of, driver_of
from tenure.fence.drivers import MARK_PREFIX, Dialect, misuse

if TYPE_CHECKING:
    from tenure.fence.drivers import Driver
    from tenure.fence.drivers_async import AsyncDriver

C = TypeVar("C")
_SQLSTATES = {"40001": "serialization_failure", "40P01": "deadlock", "55P03": "lock_timeout"}
_SQLITE_BUSY = {5: "database_locked", 6: "database_locked"}  # SQLITE_BUSY, SQLITE_LOCKED
_ABORTED = "25P02"  # in_failed_sql_transaction: a statement of the block failed
_BOUND = "SELECT current_setting('lock_timeout'), set_config('lock_timeout', ?, true)"
_RESTORE = "SELECT set_config('lock_timeout', ?, true)"


class TableFence(Protocol):
    """What the guard needs of a :class:`tenure.fence.table.TableFence` (which passes itself):
    its statements and its ``lock_timeout``. A protocol, so that this module does not import
    the table fence that imports it."""

    @property
    def lock_timeout(self) -> float | None: ...

    def sql(self, name: str, dialect: Dialect) -> str: ...

    def statement(
        self, name: str, key: str, token: int | None = None
    ) -> tuple[str, tuple[Any, ...]]: ...


def race_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (or the driver error it wraps) is a lost race, or ``None`` if it is not."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        state = sqlstate(current)
        if state in _SQLSTATES:
            return _SQLSTATES[state]
        code = getattr(current, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in _SQLITE_BUSY:
            return _SQLITE_BUSY[code & 0xFF]
        if type(current).__name__ == "OperationalError" and "database is locked" in str(current):
            return "database_locked"
        current = _cause(current)
    return None


def sqlstate(exc: BaseException) -> str:
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return state if isinstance(state, str) else ""


def _cause(exc: BaseException) -> BaseException | None:
    orig = getattr(exc, "orig", None)
    return orig if isinstance(orig, BaseException) else exc.__cause__


def _aborted(exc: BaseException) -> bool:
    while exc is not None:
        if sqlstate(exc) == _ABORTED:
            return True
        nxt = _cause(exc)
        if nxt is None or nxt is exc:
            return False
        exc = nxt
    return False


def busy(key: str, token: int, reason: str) -> FenceBusy:
    why = f"lost a race with a concurrent transaction ({reason})"
    if reason == "lock_timeout":
        why = (
            "waited past its lock_timeout for the fence row, which another transaction holds "
            "open (a paused holder may have the row; once a larger token is admitted, that "
            "holder's own commit is refused)"
        )
    return FenceBusy(
        f"fence_busy: the transaction fenced by token {token} for {key!r} {why} and was rolled "
        "back, so it wrote nothing. Run it again.",
        key=key,
        token=token,
        reason=reason,
    )


def lost(pairs: Pairs, reason: str, currents: list[int | None]) -> TenureError:
    """The error for a lost race: stale if a newer token got in meanwhile, else busy."""
    for (key, token), current in zip(pairs, currents, strict=True):
        if current is not None and current > token:
            return stale(key, token, current)
    return busy(*pairs[0], reason)


def marker() -> str:
    return f"{MARK_PREFIX}{secrets.token_hex(6)}"


def ended_inside(driver: str, exc: BaseException | None = None) -> FenceMisuse:
    return misuse(
        driver,
        "ended_inside",
        "the guarded block committed or rolled back the fence's transaction itself (a "
        "commit(), rollback() or COMMIT inside the block), so what it wrote afterwards was no "
        "longer fenced; that part was rolled back"
        + (f" ({type(exc).__name__}: {exc})" if exc is not None else ""),
        "Let the guard commit: leave the block instead of committing inside it",
    )


@contextlib.contextmanager
def guard(fence: TableFence, conn: C, pairs: Pairs) -> Iterator[C]:
    """See :meth:`TableFence.transaction`."""
    driver = driver_of(conn)
    driver.refuse()
    try:
        with driver.owned():
            admit_all(fence, driver, pairs)
            mark = marker()
            driver.execute(f"SAVEPOINT {mark}")
            with driver.sealed():
                yield conn
            release(driver, mark)
    except Exception as exc:
        if (reason := race_reason(exc)) is None or isinstance(exc, TenureError):
            raise
        raise lost(pairs, reason, reread(fence, driver, pairs)) from exc


def release(driver: Driver, mark: str) -> None:
    """Release the marker savepoint: it is gone if the block ended the transaction."""
    try:
        driver.execute(f"RELEASE SAVEPOINT {mark}")
    except Exception as exc:
        if _aborted(exc):
            raise
        raise ended_inside(driver.name, exc) from exc


def admit_all(fence: TableFence, driver: Driver, pairs: Pairs) -> None:
    previous = None
    if driver.dialect == "postgres" and fence.lock_timeout is not None:
        previous = driver.fetchone(_BOUND, (f"{round(fence.lock_timeout * 1000)}ms",))
    for key, token in pairs:
        row = driver.fetchone(*fence.statement("admit", key, token))
        if row is None:  # the largest token of the key and the subtrees above it
            found = driver.fetchone(*fence.statement("current_tree", key))
            raise stale(key, token, None if found is None or found[0] is None else int(found[0]))
    if previous is not None:
        driver.fetchone(_RESTORE, (previous[0],))


def current(fence: TableFence, driver: Driver, key: str) -> int | None:
    row = driver.fetchone(fence.sql("current", "sqlite"), (key,))
    return None if row is None else int(row[0])


def reread(fence: TableFence, driver: Driver, pairs: Pairs) -> list[int | None]:
    """The fence's tokens for the keys in a fresh transaction (``None`` if that fails too)."""
    try:
        with driver.owned(write=False):
            return [current(fence, driver, key) for key, _ in pairs]
    except Exception:
        return [None] * len(pairs)


@contextlib.asynccontextmanager
async def aguard(fence: TableFence, conn: C, pairs: Pairs) -> AsyncIterator[C]:
    """See :meth:`TableFence.atransaction`."""
    driver = async_driver_of(conn)
    driver.refuse()
    try:
        async with driver.owned():
            await aadmit_all(fence, driver, pairs)
            mark = marker()
            await driver.execute(f"SAVEPOINT {mark}")
            async with driver.sealed():
                yield conn
            await arelease(driver, mark)
    except Exception as exc:
        if (reason := race_reason(exc)) is None or isinstance(exc, TenureError):
            raise
        raise lost(pairs, reason, await areread(fence, driver, pairs)) from exc


async def arelease(driver: AsyncDriver, mark: str) -> None:
    try:
        await driver.execute(f"RELEASE SAVEPOINT {mark}")
    except Exception as exc:
        if _aborted(exc):
            raise
        raise ended_inside(driver.name, exc) from exc


async def aadmit_all(fence: TableFence, driver: AsyncDriver, pairs: Pairs) -> None:
    previous = None
    if driver.dialect == "postgres" and fence.lock_timeout is not None:
        previous = await driver.fetchone(_BOUND, (f"{round(fence.lock_timeout * 1000)}ms",))
    for key, token in pairs:
        row = await driver.fetchone(*fence.statement("admit", key, token))
        if row is None:  # the largest token of the key and the subtrees above it
            found = await driver.fetchone(*fence.statement("current_tree", key))
            raise stale(key, token, None if found is None or found[0] is None else int(found[0]))
    if previous is not None:
        await driver.fetchone(_RESTORE, (previous[0],))


async def acurrent(fence: TableFence, driver: AsyncDriver, key: str) -> int | None:
    row = await driver.fetchone(fence.sql("current", "sqlite"), (key,))
    return None if row is None else int(row[0])


async def areread(fence: TableFence, driver: AsyncDriver, pairs: Pairs) -> list[int | None]:
    try:
        async with driver.owned(write=False):
            return [await acurrent(fence, driver, key) for key, _ in pairs]
    except Exception:
        return [None] * len(pairs)
