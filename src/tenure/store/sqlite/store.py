"""The SQLite store: the embedded default. WAL mode, durable commits, the process's clock."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from tenure.core.clock import Clock, SystemClock
from tenure.core.decide import reaped_event
from tenure.core.models import (
    Event,
    KeyRecord,
    LostLease,
)
from tenure.store import rows
from tenure.store.health import Health
from tenure.store.sqlfiles import migrations, queries
from tenure.store.sqlite.groups import SqliteGroups
from tenure.store.sqlite.locks import retry_locked
from tenure.store.sqlite.opened_file import OpenedFile, gone
from tenure.store.sqlite.records import SqliteRecords, insert_events
from tenure.store.sqlite.stats import SqliteStats
from tenure.store.sqlite.tx import SqliteKeyTx
from tenure.store.sqlite.writer import Batch, Savepoint, Writer
from tenure.store.values import Reach

Q = queries("sqlite")
SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA")


class _GroupKeyTx:
    """:meth:`SqliteStore.key_tx` in this thread's open group: a :class:`_Savepoint` and the
    key's transaction in it."""

    __slots__ = ("clock", "key", "reach", "savepoint")

    def __init__(self, store: SqliteStore, group: Batch, key: str, reach: Reach | None) -> None:
        self.savepoint, self.key, self.reach = Savepoint(store.writer, group), key, reach
        self.clock = store.clock

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


class SqliteStore(SqliteRecords, SqliteStats):
    """A store in one SQLite file, safe to share between threads and processes."""

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
        self._migrate()

    # connections -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self.writer.writing():
            return self.writer.conn()  # inside a write: read what this transaction wrote
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

    # the file's health ----------------------------------------------------------------------
    def probe(self) -> None:
        """Check that the database file is still the one opened and can be read; raises
        :class:`sqlite3.OperationalError` naming the problem if not."""
        self.file.probe()

    def recovered(self) -> None:
        """The file answers again after an outage the watch saw: it is the file opened (a
        replaced one never answers, :meth:`probe`), which cannot have gone back in time."""

    def group_commit(self) -> SqliteGroups:
        """A server's group commits on the event loop, with a deferred sync and background
        checkpoints from now on (:mod:`tenure.store.sqlite.groups`)."""
        return SqliteGroups(self.writer)

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction, committed durably before this returns (:mod:`.writer`)."""
        return self.writer.write()

    def group(self) -> AbstractContextManager[None]:
        return self.writer.group()

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS tenure_schema "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                "applied_at INTEGER NOT NULL)"
            )
            current = conn.execute("SELECT coalesce(max(version), 0) FROM tenure_schema")
            have = int(current.fetchone()[0])
            known = migrations("sqlite")
            if have > len(known):
                raise RuntimeError(f"{self.path} has schema {have}, newer than this tenure")
            for version, name, sql in known[have:]:
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO tenure_schema VALUES (?, ?, ?)",
                    (version, name, self.clock.now_ms()),
                )

    def schema_version(self) -> int:
        return int(self._conn().execute("SELECT max(version) FROM tenure_schema").fetchone()[0])

    # the protocol --------------------------------------------------------------------------
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
            return _GroupKeyTx(self, group, key, reach)
        return self._key_tx(key, reach)

    @contextmanager
    def _key_tx(self, key: str, reach: Reach | None) -> Iterator[SqliteKeyTx]:
        with self._write() as conn:
            # The instant is read once the write lock is held, so it orders with the commit.
            yield SqliteKeyTx(conn, key, self.clock.now_ms(), reach)

    def renew_all(
        self, holder: str, session: str | None, keys: Sequence[str] | None
    ) -> tuple[int, list[KeyRecord]]:
        with self._write() as conn:
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
        with self._write() as conn:
            now = self.clock.now_ms()
            params = {"holder": holder, "session": session, "now": now}
            renewed = conn.execute(Q["renew_held"], params).rowcount
            count, leases = conn.execute(Q["renewed_json"], params).fetchone()
            if count != renewed:  # renewed_json's predicate no longer matches renew_held's
                raise RuntimeError(f"renewed {renewed} leases of {holder!r} but listed {count}")
            return now, [leases] if leases else [], count

    def lapsed(self, holder: str, session: str, window_ms: int) -> tuple[int, list[LostLease]]:
        now = self.clock.now_ms()
        params = {"holder": holder, "session": session, "now": now, "since": now - window_ms}
        found = self._conn().execute(Q["lapsed_leases"], params).fetchall()
        return now, rows.lapsed_of(found)

    def reap(self, limit: int) -> list[Event]:
        with self._write() as conn:
            now = self.clock.now_ms()
            due = conn.execute(Q["due_leases"], {"now": now, "limit": limit}).fetchall()
            drafts = []
            for row in due:
                params = {"key": row[0], "token": row[1], "now": now}
                if conn.execute(Q["mark_expired"], params).rowcount == 1:
                    drafts.append(reaped_event(row))
            return insert_events(conn, drafts, now)

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """No cross-process notifications on SQLite: one server owns the file (other processes
        on it, such as direct-mode clients, are seen by the followers' one-second re-reads and
        by waiters at the holder's deadline)."""
        return None

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


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (comments dropped first: they may hold ``;``). A
    piece ends a statement only where SQLite agrees it is complete (a trigger's body holds
    ``;`` of its own)."""
    code = re.sub(r"--[^\n]*", "", sql)
    out, pending = [], ""
    for piece in code.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending.strip())
    return out
