"""The SQLite connector: the embedded default. WAL mode, durable commits, the process's clock.

Reads run on a connection of their own per thread; every write of the process goes through
one writer connection (:mod:`tenure.store.sqlite.writer`), so SQLite's write lock is the key
lock of every transaction, and a subtree acquisition reads its neighbours under it
(:mod:`tenure.store.sqlite.tx`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypedDict

from tenure.core.clock import Clock, SystemClock
from tenure.core.decide import reaped_event
from tenure.core.models import Event, EventDraft, KeyRecord
from tenure.store import rows
from tenure.store.health import Health
from tenure.store.sqlfiles import queries
from tenure.store.sqlite.groups import SqliteGroups
from tenure.store.sqlite.locks import retry_locked
from tenure.store.sqlite.migrate import migrate
from tenure.store.sqlite.opened_file import OpenedFile, gone
from tenure.store.sqlite.records import insert_events
from tenure.store.sqlite.stats import first_event_at
from tenure.store.sqlite.tx import SqliteKeyTx
from tenure.store.sqlite.writer import Batch, Savepoint, Writer
from tenure.store.values import Reach

Q = queries("sqlite")
SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA")


class _GroupKeyTx:
    """:meth:`SqliteConnector.key_tx` in this thread's open group: a :class:`Savepoint` and
    the key's transaction in it. A plain context manager, no generator frames: the hot path."""

    __slots__ = ("clock", "key", "reach", "savepoint")

    def __init__(self, writer: Writer, clock: Clock, group: Batch, key: str, reach: Reach | None):
        self.savepoint, self.key, self.reach = Savepoint(writer, group), key, reach
        self.clock = clock

    def __enter__(self) -> SqliteKeyTx:
        conn = self.savepoint.__enter__()
        try:  # the instant is read under the write lock, so it orders with the commit
            now = self.clock.now_ms()
            return SqliteKeyTx(conn, self.key, now, self.reach)
        except BaseException as exc:
            self.savepoint.__exit__(type(exc))
            raise

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.savepoint.__exit__(kind)


class SqliteOptions(TypedDict, total=False):
    """The options of :class:`SqliteConnector` besides its path (what a
    :class:`~tenure.store.sqlite.store.SqliteStore` passes on)."""

    clock: Clock | None
    synchronous: str
    busy_timeout_ms: int


class SqliteConnector:
    """One SQLite file, safe to share between threads and processes."""

    NO_LIMIT: int | None = -1
    Q: Mapping[str, str] = Q

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 30_000,
    ) -> None:
        if synchronous.upper() not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS}")
        self.file = OpenedFile(path)
        self.path, self.real_path = self.file.path, self.file.real_path
        self.url = f"sqlite:///{self.path}"
        self.clock = clock or SystemClock()
        self._busy_s = busy_timeout_ms / 1000
        self._pragmas = (
            f"PRAGMA busy_timeout = {int(busy_timeout_ms)}",
            "PRAGMA journal_mode = WAL",
            f"PRAGMA synchronous = {synchronous.upper()}",
        )
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.health = Health()
        self.writer = Writer(
            self._connect,
            self.file,
            self.health,
            synchronous=synchronous.upper(),
            busy_ms=int(busy_timeout_ms),
        )
        with self.writer.write() as conn:
            migrate(conn, self.path, self.clock)

    # connections -------------------------------------------------------------------------
    def conn(self) -> sqlite3.Connection:
        """This thread's connection for reads (inside a write: the writer's, to read what the
        write did)."""
        if self.writer.writing():
            return self.writer.conn()
        if self.health.down is not None:
            raise gone(self.health.down)
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError("the store is closed")
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        for pragma in self._pragmas:
            retry_locked(conn, pragma, self._busy_s)
        with self._lock:
            self._all.append(conn)
        return conn

    # the primitives (tenure.store.connector) -----------------------------------------------
    def query_all(self, name: str, params: dict[str, Any]) -> list[Any]:
        return self.conn().execute(Q[name], params).fetchall()

    def query_one(self, name: str, params: dict[str, Any]) -> Any:
        return self.conn().execute(Q[name], params).fetchone()

    def reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self.conn())

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn()
        if conn.in_transaction:  # this thread's own write: it is one snapshot already
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.writer.write()

    def now_in(self, cur: Any) -> int:
        return self.clock.now_ms()

    def append(self, cur: Any, events: Sequence[EventDraft], now: int) -> list[Event]:
        return insert_events(cur, events, now)

    def texts(self, values: Sequence[str]) -> str:
        return json.dumps(list(values))

    def stats_rows(self, name: str, params: dict[str, Any]) -> Iterator[Any]:
        conn = self.conn()
        for start in ("since", "start"):  # a time window: where it starts in the ids
            if start in params:
                params["first_id"] = first_event_at(conn, params[start])
        return iter(conn.execute(Q[name], params).fetchall())

    # what SQLite does its own way ----------------------------------------------------------
    def now_ms(self) -> int:
        return self.clock.now_ms()

    def key_tx(
        self,
        key: str,
        *,
        create: bool = False,
        reach: Reach | None = None,
        extends: bool = False,  # (SQLite's write lock already excludes every other writer)
    ) -> AbstractContextManager[SqliteKeyTx]:
        group = self.writer.group_here()
        if group is not None:  # the server's groups (the hot path): no generator frames
            return _GroupKeyTx(self.writer, self.clock, group, key, reach)
        return self._key_tx(key, reach)

    @contextmanager
    def _key_tx(self, key: str, reach: Reach | None) -> Iterator[SqliteKeyTx]:
        with self.writer.write() as conn:
            # The instant is read once the write lock is held, so it orders with the commit.
            yield SqliteKeyTx(conn, key, self.clock.now_ms(), reach)

    def group(self, keys: Sequence[str] = ()) -> AbstractContextManager[None]:
        """(``keys`` need no locking ahead: the group holds SQLite's write lock.)"""
        return self.writer.group()

    def group_commit(self) -> SqliteGroups:
        """A server's group commits on the event loop, with a deferred sync and background
        checkpoints from now on (:mod:`tenure.store.sqlite.groups`)."""
        return SqliteGroups(self.writer)

    def renew_all(
        self, holder: str, session: str | None, keys: Sequence[str] | None
    ) -> tuple[int, list[KeyRecord]]:
        with self.writer.write() as conn:
            now = self.clock.now_ms()
            params = {
                "holder": holder,
                "session": session,
                "now": now,
                "keys": None if keys is None else rows.dumps(keys),
            }
            found = conn.execute(Q["renew_all"], params)
            return now, [rows.record_from(r, _meta) for r in found]

    def renew_all_json(self, holder: str, session: str | None) -> tuple[int, list[bytes], int]:
        with self.writer.write() as conn:
            now = self.clock.now_ms()
            params = {"holder": holder, "session": session, "now": now}
            renewed = conn.execute(Q["renew_held"], params).rowcount
            count, leases = conn.execute(Q["renewed_json"], params).fetchone()
            if count != renewed:  # renewed_json's predicate no longer matches renew_held's
                raise RuntimeError(f"renewed {renewed} leases of {holder!r} but listed {count}")
            return now, [leases] if leases else [], count

    def reap(self, limit: int) -> list[Event]:
        with self.writer.write() as conn:
            now = self.clock.now_ms()
            due = conn.execute(Q["due_leases"], {"now": now, "limit": limit}).fetchall()
            drafts = []
            for row in due:
                params = {"key": row[0], "token": row[1], "now": now}
                if conn.execute(Q["mark_expired"], params).rowcount == 1:
                    drafts.append(reaped_event(row))
            return insert_events(conn, drafts, now)

    def auth_version(self) -> int:
        """Moves whenever a principal or a token changes (migration 0004's triggers)."""
        return int(self.conn().execute(Q["auth_version"]).fetchone()[0])

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """No cross-process notifications on SQLite: one server owns the file (other processes
        on it, such as direct-mode clients, are seen by the followers' one-second re-reads and
        by waiters at the holder's deadline)."""
        return None

    def probe(self) -> None:
        """Check that the database file is still the one opened and can be read; raises
        :class:`sqlite3.OperationalError` naming the problem if not."""
        self.file.probe()

    def recovered(self) -> None:
        """The file answers again after an outage the watch saw: it is the file opened (a
        replaced one never answers, :meth:`probe`), which cannot have gone back in time."""

    def close(self) -> None:
        self.writer.close()
        with self._lock:
            self._closed = True
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


def _meta(value: Any) -> Any:
    """``meta`` of a row: most leases have none, and parsing ``{}`` thousands of times shows."""
    return {} if value == "{}" else rows.loads_text(value)
