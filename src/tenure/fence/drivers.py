"""Adapters that let :meth:`TableFence.transaction` own a transaction on each blocking driver
it accepts (the asyncio ones are in :mod:`tenure.fence.drivers_async`).

Each adapter knows three things about its connection: whether a transaction can be owned
right now (:meth:`refuse` raises :class:`tenure.FenceMisuse` if not), how to begin, commit
and roll back one (:meth:`owned`), and how to run one statement and read its first row.
Drivers are recognised by the module and name of the connection's class, so none of them is
imported unless the caller already uses it: tenure requires none of them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

from tenure.errors import FenceMisuse

Dialect = Literal["sqlite", "postgres"]
Row = tuple[Any, ...] | None
_IDLE = 0  # libpq's PQTRANS_IDLE, as psycopg and psycopg2 report it
_MARK = re.compile(r"\?")


class Driver(Protocol):
    """A blocking connection whose transaction the fence can own."""

    name: str
    dialect: Dialect

    def refuse(self) -> None: ...

    def owned(self, write: bool = True) -> AbstractContextManager[None]: ...

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row: ...

    def execute(self, sql: str) -> None: ...

    def sealed(self) -> AbstractContextManager[None]: ...


def misuse(driver: str, state: str, facts: str, todo: str) -> FenceMisuse:
    return FenceMisuse(f"conn: {facts}. {todo}.", field="conn", driver=driver, state=state)


def check_idle(driver: str, closed: bool, busy: Callable[[], bool]) -> None:
    """Refuse a closed connection, or one whose transaction is open (``busy()``)."""
    if closed:
        raise misuse(driver, "closed", "the connection is closed", "Open a new one")
    if busy():
        raise in_transaction(driver)


class Adapter:
    """A connection of one driver: its ``name``, the SQL ``dialect`` it speaks."""

    name: str
    dialect: Dialect

    def __init__(self, conn: Any) -> None:
        self.conn = conn


class Unsealed:
    """A blocking driver whose commit inside the block the fence cannot refuse as it happens
    (the marker savepoint finds it before the fence's commit)."""

    def sealed(self) -> AbstractContextManager[None]:
        """While the block runs: refuse the caller's own commit or rollback if the driver
        lets the fence do so (this one does not)."""
        return contextlib.nullcontext()


def in_transaction(driver: str) -> FenceMisuse:
    return misuse(
        driver,
        "in_transaction",
        f"this {driver} connection is already inside a transaction or savepoint (a statement "
        "ran since its last commit, or a transaction block is open), so the fence could only "
        "nest in it and its commit would not be the fence's",
        "Commit or roll back first, or pass a connection that is idle",
    )


def autocommit(driver: str) -> FenceMisuse:
    return misuse(
        driver,
        "autocommit",
        f"this {driver} connection commits every statement on its own (AUTOCOMMIT isolation), "
        "so the fence check and your write cannot commit together",
        "Use a connection without AUTOCOMMIT isolation",
    )


def marks(sql: str, style: str) -> str:
    """``sql`` written with ``?`` markers, in the driver's parameter style."""
    counter = iter(range(1, 1000))
    if style == "format":
        return sql.replace("?", "%s")
    if style == "dollar":
        return _MARK.sub(lambda _: f"${next(counter)}", sql)
    return _MARK.sub(lambda _: f":p{next(counter)}", sql)  # named


def named(params: tuple[Any, ...]) -> dict[str, Any]:
    return {f"p{i}": value for i, value in enumerate(params, 1)}


@contextlib.contextmanager
def _statements(run: Callable[[str], object], begin: str) -> Iterator[None]:
    """BEGIN, then COMMIT on success or ROLLBACK on any error, as plain statements."""
    run(begin)
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            run("ROLLBACK")
        raise
    try:
        run("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):
            run("ROLLBACK")
        raise


class Sqlite3(Adapter):
    """:mod:`sqlite3`: ``BEGIN IMMEDIATE`` takes the write lock before the fence is read."""

    name = "sqlite3"
    dialect: Dialect = "sqlite"

    def refuse(self) -> None:
        check_idle(self.name, False, lambda: bool(self.conn.in_transaction))

    def owned(self, write: bool = True) -> AbstractContextManager[None]:
        return _statements(self.conn.execute, "BEGIN IMMEDIATE" if write else "BEGIN")

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else tuple(row)

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    @contextlib.contextmanager
    def sealed(self) -> Iterator[None]:
        self.conn.set_authorizer(no_transaction_statements)
        try:
            with refusals_named(self.name):
                yield
        finally:
            self.conn.set_authorizer(None)


@contextlib.contextmanager
def refusals_named(driver: str) -> Iterator[None]:
    """Raise the authorizer's refusal of a commit or rollback inside the block as
    :class:`tenure.FenceMisuse` (any other error goes on as it is)."""
    try:
        yield
    except Exception as exc:
        if "not authorized" not in str(exc):
            raise
        raise _ended_inside(driver) from exc


def _ended_inside(driver: str) -> FenceMisuse:
    return misuse(
        driver,
        "ended_inside",
        "the guarded block tried to commit or roll back the fence's transaction itself "
        "(commit(), rollback() or a COMMIT statement); it was refused and everything rolled back",
        "Let the guard commit: leave the block instead of committing inside it",
    )


#: SQLite's authorizer action codes for BEGIN/COMMIT/ROLLBACK and for savepoints
_SQLITE_TRANSACTION, _SQLITE_SAVEPOINT, _SQLITE_DENY = 22, 32, 1


def no_transaction_statements(action: int, what: str | None, name: str | None, *_: object) -> int:
    """A sqlite3 authorizer: deny ``COMMIT``/``ROLLBACK`` (``conn.commit()`` too) and the release
    or rollback of the fence's marker savepoint; allow everything else."""
    if action == _SQLITE_TRANSACTION:
        return _SQLITE_DENY
    if action == _SQLITE_SAVEPOINT and what != "BEGIN" and str(name).startswith(MARK_PREFIX):
        return _SQLITE_DENY
    return 0


#: the fence's marker savepoint: opened after the admission, released right before the commit
MARK_PREFIX = "tenure_fence_"


class Psycopg(Unsealed, Adapter):
    """psycopg 3 ``Connection``: its own outermost ``transaction()`` block."""

    name = "psycopg"
    dialect: Dialect = "postgres"

    def refuse(self) -> None:
        busy = lambda: int(self.conn.info.transaction_status) != _IDLE  # noqa: E731
        check_idle(self.name, self.conn.closed, busy)

    def owned(self, write: bool = True) -> AbstractContextManager[None]:
        return self.conn.transaction()  # type: ignore[no-any-return]

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        row = self.conn.execute(marks(sql, "format"), params).fetchone()
        return None if row is None else tuple(row)

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)


class Psycopg2(Unsealed, Adapter):
    """psycopg2: its implicit transaction, or an explicit ``BEGIN`` when in autocommit."""

    name = "psycopg2"
    dialect: Dialect = "postgres"

    def refuse(self) -> None:
        check_idle(self.name, self.conn.closed, lambda: self.conn.get_transaction_status() != _IDLE)

    @contextlib.contextmanager
    def owned(self, write: bool = True) -> Iterator[None]:
        if self.conn.autocommit:
            with _statements(self._run, "BEGIN"):
                yield
            return
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self.conn.rollback()
            raise
        try:
            self.conn.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                self.conn.rollback()
            raise

    def _run(self, sql: str) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql)

    execute = _run

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        with self.conn.cursor() as cur:
            cur.execute(marks(sql, "format"), params)
            row = cur.fetchone()
        return None if row is None else tuple(row)


def _dialect(name: str, driver: str) -> Dialect:
    if name == "sqlite":
        return "sqlite"
    if name == "postgresql":
        return "postgres"
    raise misuse(
        driver,
        "unsupported",
        f"the fence keeps its table in SQLite or PostgreSQL, not {name}",
        "Use a SQLite or PostgreSQL database",
    )


def _autocommit_level(conn: Any) -> bool:
    """Whether SQLAlchemy put the driver connection under AUTOCOMMIT isolation."""
    return getattr(conn.connection.dbapi_connection, "autocommit", False) is True


class SQLAlchemyConnection(Unsealed):
    """SQLAlchemy ``Connection``: ``begin()``, and ``BEGIN IMMEDIATE`` underneath on SQLite."""

    name = "sqlalchemy"

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.dialect = _dialect(conn.dialect.name, self.name)

    def refuse(self) -> None:
        conn = self.conn
        check_idle(
            self.name, conn.closed, lambda: conn.in_transaction() or conn.in_nested_transaction()
        )
        if _autocommit_level(self.conn):
            raise autocommit(self.name)

    @contextlib.contextmanager
    def owned(self, write: bool = True) -> Iterator[None]:
        with self.conn.begin():
            _immediate(self.conn, self.dialect, write)
            yield

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        return _sa_fetchone(self.conn, sql, params)

    def execute(self, sql: str) -> None:
        self.conn.exec_driver_sql(sql)


class SQLAlchemySession(Unsealed):
    """SQLAlchemy ORM ``Session``: ``session.begin()``; it flushes your objects at commit."""

    name = "sqlalchemy"

    def __init__(self, session: Any) -> None:
        self.session = session
        bind = session.get_bind()
        self.dialect = _dialect(bind.dialect.name, self.name)

    def refuse(self) -> None:
        if self.session.in_transaction():
            raise in_transaction("sqlalchemy Session")

    @contextlib.contextmanager
    def owned(self, write: bool = True) -> Iterator[None]:
        with self.session.begin():
            conn = self.session.connection()
            if _autocommit_level(conn):
                raise autocommit("sqlalchemy Session")
            _immediate(conn, self.dialect, write)
            yield

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        return _sa_fetchone(self.session, sql, params)

    def execute(self, sql: str) -> None:
        self.session.connection().exec_driver_sql(sql)


def _immediate(conn: Any, dialect: Dialect, write: bool) -> None:
    """On SQLite, take the write lock now (pysqlite itself begins lazily, deferred)."""
    if dialect == "sqlite" and write and not conn.connection.driver_connection.in_transaction:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sa_fetchone(executor: Any, sql: str, params: tuple[Any, ...]) -> Row:
    from sqlalchemy import text

    row = executor.execute(text(marks(sql, "named")), named(params)).fetchone()
    return None if row is None else tuple(row)


class Django(Unsealed):
    """A Django database connection: an outermost, durable ``transaction.atomic`` block."""

    name = "django"

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.dialect = _dialect(conn.vendor, self.name)

    def refuse(self) -> None:
        # Django's TestCase wraps each test in atomic blocks marked _from_testcase (and exempts
        # durable blocks inside them): the guard nests there as it would in production.
        outer = [b for b in self.conn.atomic_blocks if not getattr(b, "_from_testcase", False)]
        if outer or (not self.conn.in_atomic_block and not self.conn.get_autocommit()):
            raise in_transaction(self.name)

    def owned(self, write: bool = True) -> AbstractContextManager[None]:
        from django.db import transaction  # type: ignore[import-untyped]

        block: AbstractContextManager[None] = transaction.atomic(
            using=self.conn.alias, durable=True
        )
        return block

    def fetchone(self, sql: str, params: tuple[Any, ...]) -> Row:
        with self.conn.cursor() as cur:
            cur.execute(marks(sql, "format"), params)
            row = cur.fetchone()
        return None if row is None else tuple(row)

    def execute(self, sql: str) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql)


SYNC: dict[tuple[str, str], Callable[[Any], Driver]] = {
    ("sqlite3", "Connection"): Sqlite3,
    ("psycopg", "Connection"): Psycopg,
    ("psycopg2", "connection"): Psycopg2,
    ("sqlalchemy", "Connection"): SQLAlchemyConnection,
    ("sqlalchemy", "Session"): SQLAlchemySession,
    ("django", "BaseDatabaseWrapper"): Django,
}


def kind_of(conn: object, table: dict[tuple[str, str], Any]) -> Any:
    for cls in type(conn).__mro__:
        found = table.get((cls.__module__.partition(".")[0], cls.__name__))
        if found is not None:
            return found
    return None


def unknown(conn: object, wanted: str, other: str) -> FenceMisuse:
    kind = type(conn).__name__
    return misuse(
        f"{type(conn).__module__}.{kind}",
        "unsupported",
        f"fence.{wanted} does not know {kind} connections",
        f"Use fence.{other} for it" if other else "See docs/fencing.md for the drivers it accepts",
    )
