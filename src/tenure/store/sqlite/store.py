"""The SQLite store: the embedded default. WAL mode, durable commits, the process's clock."""

from __future__ import annotations

import os
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
from tenure.store import durability, rows
from tenure.store.errors import sync_failed
from tenure.store.health import Health
from tenure.store.sqlfiles import migrations, queries
from tenure.store.sqlite.durable.checkpoints import BACKSTOP_PAGES, Checkpointer
from tenure.store.sqlite.durable.wal_sync import WalSync
from tenure.store.sqlite.files import prepare_database
from tenure.store.sqlite.groups import SqliteGroups
from tenure.store.sqlite.locks import is_busy, retry_locked
from tenure.store.sqlite.records import SqliteRecords, insert_events
from tenure.store.sqlite.stats import SqliteStats
from tenure.store.sqlite.tx import Batch, SqliteKeyTx
from tenure.store.values import Reach

Q = queries("sqlite")
SYNCHRONOUS = ("FULL", "NORMAL", "EXTRA")
MAX_BATCH = 64  # writes that share one commit, at most


class _Savepoint:
    """A write in the open batch ``group``: a savepoint of its transaction (a write that fails
    rolls back alone). A plain context manager, no generator frames: the server's group commits
    enter one per hot call."""

    __slots__ = ("conn", "group", "store")

    def __init__(self, store: SqliteStore, group: Batch) -> None:
        self.store, self.group, self.conn = store, group, store._writer_conn()

    def __enter__(self) -> sqlite3.Connection:
        self.group.size += 1
        self.conn.execute("SAVEPOINT tenure_write")
        self.store._local.writing = True
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is not None:
                self.conn.execute("ROLLBACK TO tenure_write")
        finally:
            self.store._local.writing = False
            self.conn.execute("RELEASE tenure_write")


class _GroupKeyTx:
    """:meth:`SqliteStore.key_tx` in this thread's open group: a :class:`_Savepoint` and the
    key's transaction in it."""

    __slots__ = ("key", "reach", "savepoint")

    def __init__(self, store: SqliteStore, group: Batch, key: str, reach: Reach | None) -> None:
        self.savepoint, self.key, self.reach = _Savepoint(store, group), key, reach

    def __enter__(self) -> SqliteKeyTx:
        conn = self.savepoint.__enter__()
        try:  # the instant is read under the write lock, so it orders with the commit
            now = self.savepoint.store.clock.now_ms()
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
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._synchronous = synchronous.upper()
        self.clock = clock or SystemClock()
        self._busy_s = busy_timeout_ms / 1000
        self._busy_ms = int(busy_timeout_ms)
        self._writer_busy_ms = self._busy_ms  # the writer connection's busy timeout now
        self._pragmas = (
            f"PRAGMA busy_timeout = {int(busy_timeout_ms)}",
            "PRAGMA journal_mode = WAL",
            f"PRAGMA synchronous = {synchronous.upper()}",
        )
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writer = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queued = 0  # threads waiting for ``_writer``
        self._batch: Batch | None = None  # the open group-commit transaction
        self._wconn: sqlite3.Connection | None = None
        self._closed = False
        self._checkpointer: Checkpointer | None = None
        self.wal_sync: WalSync | None = None  # deferred mode (defer_sync)
        on_disk = str(path) != ":memory:"
        # SQLite's WAL is beside the file a link names
        self.real_path = self.path.resolve() if on_disk else self.path
        self.health = Health()
        self._identity: tuple[int, int] | None = None  # the file opened (device, inode)
        if on_disk:
            prepare_database(self.real_path)
            info = os.stat(self.real_path)
            self._identity = (info.st_dev, info.st_ino)
        self._migrate()

    # connections -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if getattr(self._local, "writing", False):
            return self._writer_conn()  # inside a write: read what this transaction wrote
        if self.health.down is not None:
            raise self._gone(self.health.down)
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

    def _writer_conn(self) -> sqlite3.Connection:
        """The one connection every write of this process goes through (under ``_writer``)."""
        if self._wconn is None:
            self._wconn = self._connect()
            self._writer_busy_ms = self._busy_ms
            if self._checkpointer is not None:
                self._wconn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            if self.wal_sync is not None and self.wal_sync.needed:
                self._wconn.execute("PRAGMA synchronous = NORMAL")
        return self._wconn

    def defer_sync(self) -> WalSync:
        """Deferred mode, for a server: commits write the WAL without syncing it, and each
        committer syncs it before it returns (:meth:`end_group` with ``sync=False`` leaves that
        to its caller: ``wal_sync.sync()``). See :mod:`tenure.store.sqlite.durable.wal_sync`."""
        with self._writer:
            if self.wal_sync is None:
                conn = self._writer_conn()
                wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
                # not in WAL mode (a filesystem without shared memory): COMMIT keeps syncing
                self.wal_sync = WalSync(
                    self.real_path, needed=wal and self._synchronous != "NORMAL"
                )
                if self.wal_sync.needed:
                    conn.execute("PRAGMA synchronous = NORMAL")
            return self.wal_sync

    def checkpoint_in_background(self) -> None:
        """Checkpoint the WAL in a background thread instead of inside commits (for a server:
        :mod:`tenure.store.sqlite.durable.checkpoints`)."""
        with self._writer:
            if self._checkpointer is None:
                self._checkpointer = Checkpointer(self._connect)
                if self._wconn is not None:
                    self._wconn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")

    # the file's health ----------------------------------------------------------------------
    def probe(self) -> None:
        """Check that the database file is still the one opened and can be read; raises
        :class:`sqlite3.OperationalError` naming the problem if not."""
        self._check_file()
        if self._identity is None:
            return
        try:
            uri = f"{self.real_path.as_uri()}?mode=ro"  # (as_uri: a path of any characters)
            probe = sqlite3.connect(uri, uri=True, timeout=1)
            try:
                probe.execute("PRAGMA schema_version").fetchone()
            finally:
                probe.close()
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                return  # another writer: the file is there
            raise self._gone(f"{self.real_path}: {exc}") from None

    def recovered(self) -> None:
        """The file answers again after an outage the watch saw: it is the file opened (a
        replaced one never answers, :meth:`probe`), which cannot have gone back in time."""

    def _check_file(self) -> None:
        """``unable to open`` if the file at the path is not the one opened (removed, moved,
        replaced) or cannot be looked at: the connections would go on with a file nobody
        reads."""
        if self._identity is None:
            return
        try:
            info = os.stat(self.real_path)
        except OSError as exc:
            raise self._gone(f"{self.real_path}: {exc.strerror}") from None
        if (info.st_dev, info.st_ino) != self._identity:
            raise self._gone(
                f"{self.real_path} was replaced since it was opened (restart the server)"
            )

    @staticmethod
    def _gone(why: str) -> sqlite3.OperationalError:
        return sqlite3.OperationalError(f"unable to open database file: {why}")

    def group_commit(self) -> SqliteGroups:
        """A server's group commits on the event loop, with a deferred sync and background
        checkpoints from now on (:mod:`tenure.store.sqlite.groups`)."""
        return SqliteGroups(self)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed durably before this returns; with group commit.

        Writes of one process take turns on a lock (fair and cheap) before SQLite's write lock,
        whose busy handler sleeps and retries; other processes still meet at the file lock. A
        write runs in a savepoint of the open *batch* transaction (``BEGIN IMMEDIATE``); its
        thread then commits the batch if no other write is queued (or the batch is full), else
        leaves the commit to the next one and waits for it. So concurrent writes share one
        fsync (``synchronous`` is unchanged), each write sees the ones before it, and nothing
        returns, nor is acknowledged, before the commit that holds it is durable. A write that
        fails rolls back its savepoint only; a commit that fails fails every write of its batch.
        """
        group: Batch | None = getattr(self._local, "group", None)
        if group is not None:
            with _Savepoint(self, group) as conn:
                yield conn
            return
        self._take_writer()
        batch: Batch | None = None
        mine = True  # this thread commits the batch (else: a queued writer will)
        try:
            conn = self._writer_conn()
            if self._batch is None:
                self._begin(conn, wait=True)
                self._batch = Batch()
            batch = self._batch
            if batch.done is None:
                batch.done = threading.Event()
            with _Savepoint(self, batch) as conn:
                yield conn
            with self._queue_lock:
                mine = self._queued == 0 or batch.size >= MAX_BATCH
        finally:
            try:
                if batch is not None and mine:
                    self._commit(batch)
            finally:
                self._writer.release()
        if not mine and batch.done is not None:
            batch.done.wait()
        if batch.error is not None:
            raise batch.error

    def _take_writer(self) -> None:
        with self._queue_lock:
            self._queued += 1
        self._writer.acquire()
        with self._queue_lock:
            self._queued -= 1

    @contextmanager
    def group(self) -> Iterator[None]:
        """The writes of this thread inside share one transaction, committed when the block
        ends: a group commit the caller assembles itself, where :meth:`_write` assembles one
        from writes that queue. The block holds the write lock throughout; each write in it is
        a savepoint (a failed write rolls back alone), nothing in it is durable before the
        commit at the end, and a failed commit raises here. Nested groups are one group."""
        if getattr(self._local, "group", None) is not None:
            yield
            return
        self._take_writer()
        batch = self._begin_group()
        with self.joined(batch):
            try:
                yield
            except BaseException:
                self.end_group(batch, commit=False)
                raise
        self.end_group(batch, commit=True)

    def try_group(self) -> Batch | None:
        """Open a group if no other thread is writing now and no other process holds SQLite's
        write lock (this never waits for either: ``None`` then): the write lock is taken and
        the group's transaction begun. Then :meth:`joined` puts a
        thread's writes into it and :meth:`end_group` (from any thread) commits it. The
        server's event loop opens groups this way and commits them in another thread."""
        if self._queued or not self._writer.acquire(blocking=False):
            return None  # (threads queued for the lock go first: no starving them)
        try:
            return self._begin_group(wait=False)
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            return None  # another process holds SQLite's write lock: wait in a thread

    def _begin_group(self, *, wait: bool = True) -> Batch:
        """Under the write lock: the group's batch (released with the lock if this fails).
        ``wait=False``: if another process holds SQLite's write lock, fail at once (busy)
        instead of waiting up to the busy timeout."""
        try:
            if self._batch is None:  # else: a batch left for the next writer, ours to commit
                self._begin(self._writer_conn(), wait)
                self._batch = Batch()
            return self._batch
        except BaseException:
            self._writer.release()
            raise

    def _begin(self, conn: sqlite3.Connection, wait: bool) -> None:
        """``BEGIN IMMEDIATE`` on the writer connection, waiting for another process's write
        lock up to the busy timeout, or (``wait=False``) not at all. Once begun, nothing of the
        transaction waits for a lock: the busy timeout matters only here."""
        if self.health.down is not None:
            raise self._gone(self.health.down)
        timeout = self._busy_ms if wait else 0
        if self._writer_busy_ms != timeout:
            conn.execute(f"PRAGMA busy_timeout = {timeout}")
            self._writer_busy_ms = timeout
        conn.execute("BEGIN IMMEDIATE")

    @contextmanager
    def joined(self, batch: Batch) -> Iterator[None]:
        """The writes of this thread inside go into the open group ``batch``, a savepoint each."""
        self._local.group = batch
        try:
            yield
        finally:
            self._local.group = None

    def end_group(self, batch: Batch, *, commit: bool, sync: bool = True) -> None:
        """Commit (or roll back) the open group ``batch`` and release the write lock. From any
        thread, once no thread writes into it any more; a failed commit raises here.
        ``sync=False`` (deferred mode): the commit is written but not yet durable; the caller
        makes it so with ``wal_sync.sync()`` before telling anyone of it."""
        try:
            if commit:
                self._commit(batch, sync=sync)
            elif self._batch is batch:
                self._abandon(batch)
        finally:
            self._writer.release()

    def _abandon(self, batch: Batch) -> None:
        self._batch = None
        conn = self._writer_conn()
        batch.error = sqlite3.OperationalError("the group's transaction was rolled back")
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        finally:
            batch.finish()

    def _commit(self, batch: Batch, *, sync: bool = True) -> None:
        """Commit the open batch (the caller holds ``_writer``) and wake its writers; in
        deferred mode also sync it, unless ``sync`` is false (then the caller does)."""
        self._batch = None
        conn = self._writer_conn()
        try:
            self._check_file()  # not into a file that was removed: nobody would read it again
            conn.execute("COMMIT")
        except BaseException as exc:
            if durability.is_io_error(exc):
                durability.lost(f"a commit to {self.path}", exc)  # a server exits here
            batch.error = sqlite3.OperationalError(f"the commit failed: {exc}")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            batch.finish()
            raise
        try:
            if sync and self.wal_sync is not None:
                self.wal_sync.sync()
        except OSError as exc:  # written but perhaps not durable: nobody may count on it
            batch.error = sync_failed(exc)
            raise batch.error from exc
        finally:
            batch.finish()

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
        group: Batch | None = getattr(self._local, "group", None)
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
        if self._checkpointer is not None:
            self._checkpointer.stop()
        with self._lock:
            self._closed = True
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._wconn = None
        self._local = threading.local()
        if self.wal_sync is not None:
            self.wal_sync.close()


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
