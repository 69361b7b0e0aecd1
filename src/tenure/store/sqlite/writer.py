"""SQLite's writer: the one connection every write of a process goes through, the lock writes
take turns on, and the batch they share (group commit).

Writes of one process take turns on a lock (fair and cheap) before SQLite's write lock, whose
busy handler sleeps and retries; other processes still meet at the file lock. A write runs in a
savepoint of the open *batch* transaction (``BEGIN IMMEDIATE``); its thread then commits the
batch if no other write is queued (or the batch is full), else leaves the commit to the next one
and waits for it. So concurrent writes share one fsync (``synchronous`` is unchanged), each write
sees the ones before it, and nothing returns, nor is acknowledged, before the commit that holds it
is durable. A write that fails rolls back its savepoint only; a commit that fails fails every
write of its batch. A server instead opens groups itself (:meth:`Writer.try_group`,
:mod:`tenure.store.sqlite.groups`) and makes them durable after their commit
(:mod:`tenure.store.sqlite.durable`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tenure.store import durability
from tenure.store.errors import sync_failed
from tenure.store.health import Health
from tenure.store.sqlite.durable.checkpoints import BACKSTOP_PAGES, Checkpointer
from tenure.store.sqlite.durable.wal_sync import WalSync
from tenure.store.sqlite.locks import is_busy
from tenure.store.sqlite.opened_file import OpenedFile, gone

MAX_BATCH = 64  # writes that share one commit, at most


class Batch:
    """The writes of one group commit: ``done`` is set once it committed (or failed). Only
    writes that queue behind another thread's commit wait for it, so the event is made when
    the first of them joins (under the write lock, as the commit that sets it): a group the
    server's loop opens has none."""

    __slots__ = ("done", "error", "size")

    def __init__(self) -> None:
        self.done: threading.Event | None = None
        self.error: BaseException | None = None
        self.size = 0

    def finish(self) -> None:
        """It committed or failed: wake the writes waiting for it."""
        if self.done is not None:
            self.done.set()


class Savepoint:
    """A write in the open batch ``group``: a savepoint of its transaction (a write that fails
    rolls back alone). A plain context manager, no generator frames: the server's group commits
    enter one per hot call."""

    __slots__ = ("conn", "group", "writer")

    def __init__(self, writer: Writer, group: Batch) -> None:
        self.writer, self.group, self.conn = writer, group, writer.conn()

    def __enter__(self) -> sqlite3.Connection:
        self.group.size += 1
        self.conn.execute("SAVEPOINT tenure_write")
        self.writer.local.writing = True
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is not None:
                self.conn.execute("ROLLBACK TO tenure_write")
        finally:
            self.writer.local.writing = False
            self.conn.execute("RELEASE tenure_write")


class Writer:
    """The writes of one store (``connect`` makes its connections; ``file`` is checked before
    each commit, ``health`` before each transaction begins)."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        file: OpenedFile,
        health: Health,
        *,
        synchronous: str,
        busy_ms: int,
    ) -> None:
        self._connect, self.file, self.health = connect, file, health
        self._synchronous = synchronous
        self._busy_ms = busy_ms
        self._conn_busy_ms = busy_ms  # the writer connection's busy timeout now
        #: this thread's open group (``group``) and whether it is inside a write (``writing``)
        self.local = threading.local()
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queued = 0  # threads waiting for ``_lock``
        self._batch: Batch | None = None  # the open group-commit transaction
        self._conn: sqlite3.Connection | None = None
        self.checkpointer: Checkpointer | None = None
        self.wal_sync: WalSync | None = None  # deferred mode (defer_sync)

    def conn(self) -> sqlite3.Connection:
        """The one connection every write of this process goes through (under the lock)."""
        if self._conn is None:
            self._conn = self._connect()
            self._conn_busy_ms = self._busy_ms
            if self.checkpointer is not None:
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            if self.wal_sync is not None and self.wal_sync.needed:
                self._conn.execute("PRAGMA synchronous = NORMAL")
        return self._conn

    def writing(self) -> bool:
        """This thread is inside a write (its reads see what the write did)."""
        return getattr(self.local, "writing", False)

    def group_here(self) -> Batch | None:
        """This thread's open group, if any."""
        return getattr(self.local, "group", None)

    def defer_sync(self) -> WalSync:
        """Deferred mode, for a server: commits write the WAL without syncing it, and each
        committer syncs it before it returns (:meth:`end_group` with ``sync=False`` leaves that
        to its caller: ``wal_sync.sync()``). See :mod:`tenure.store.sqlite.durable.wal_sync`."""
        with self._lock:
            if self.wal_sync is None:
                conn = self.conn()
                wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
                # not in WAL mode (a filesystem without shared memory): COMMIT keeps syncing
                needed = wal and self._synchronous != "NORMAL"
                self.wal_sync = WalSync(self.file.real_path, needed=needed)
                if self.wal_sync.needed:
                    conn.execute("PRAGMA synchronous = NORMAL")
            return self.wal_sync

    def checkpoint_in_background(self) -> None:
        """Checkpoint the WAL in a background thread instead of inside commits (for a server:
        :mod:`tenure.store.sqlite.durable.checkpoints`)."""
        with self._lock:
            if self.checkpointer is None:
                self.checkpointer = Checkpointer(self._connect)
                if self._conn is not None:
                    self._conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed durably before this returns; with group commit
        (see the module's docstring); in this thread's open group, a savepoint of it."""
        group = self.group_here()
        if group is not None:
            with Savepoint(self, group) as conn:
                yield conn
            return
        self._take()
        batch: Batch | None = None
        mine = True  # this thread commits the batch (else: a queued writer will)
        try:
            conn = self.conn()
            if self._batch is None:
                self._begin(conn, wait=True)
                self._batch = Batch()
            batch = self._batch
            if batch.done is None:
                batch.done = threading.Event()
            with Savepoint(self, batch) as conn:
                yield conn
            with self._queue_lock:
                mine = self._queued == 0 or batch.size >= MAX_BATCH
        finally:
            try:
                if batch is not None and mine:
                    self.commit(batch)
            finally:
                self._lock.release()
        if not mine and batch.done is not None:
            batch.done.wait()
        if batch.error is not None:
            raise batch.error

    def _take(self) -> None:
        with self._queue_lock:
            self._queued += 1
        self._lock.acquire()
        with self._queue_lock:
            self._queued -= 1

    @contextmanager
    def group(self) -> Iterator[None]:
        """The writes of this thread inside share one transaction, committed when the block
        ends: a group commit the caller assembles itself, where :meth:`write` assembles one
        from writes that queue. The block holds the write lock throughout; each write in it is
        a savepoint (a failed write rolls back alone), nothing in it is durable before the
        commit at the end, and a failed commit raises here. Nested groups are one group."""
        if self.group_here() is not None:
            yield
            return
        self._take()
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
        the group's transaction begun. Then :meth:`joined` puts a thread's writes into it and
        :meth:`end_group` (from any thread) commits it. The server's event loop opens groups
        this way and commits them in another thread."""
        if self._queued or not self._lock.acquire(blocking=False):
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
                self._begin(self.conn(), wait)
                self._batch = Batch()
            return self._batch
        except BaseException:
            self._lock.release()
            raise

    def _begin(self, conn: sqlite3.Connection, wait: bool) -> None:
        """``BEGIN IMMEDIATE`` on the writer connection, waiting for another process's write
        lock up to the busy timeout, or (``wait=False``) not at all. Once begun, nothing of the
        transaction waits for a lock: the busy timeout matters only here."""
        if self.health.down is not None:
            raise gone(self.health.down)
        timeout = self._busy_ms if wait else 0
        if self._conn_busy_ms != timeout:
            conn.execute(f"PRAGMA busy_timeout = {timeout}")
            self._conn_busy_ms = timeout
        conn.execute("BEGIN IMMEDIATE")

    @contextmanager
    def joined(self, batch: Batch) -> Iterator[None]:
        """The writes of this thread inside go into the open group ``batch``, a savepoint each."""
        self.local.group = batch
        try:
            yield
        finally:
            self.local.group = None

    def end_group(self, batch: Batch, *, commit: bool, sync: bool = True) -> None:
        """Commit (or roll back) the open group ``batch`` and release the write lock. From any
        thread, once no thread writes into it any more; a failed commit raises here.
        ``sync=False`` (deferred mode): the commit is written but not yet durable; the caller
        makes it so with ``wal_sync.sync()`` before telling anyone of it."""
        try:
            if commit:
                self.commit(batch, sync=sync)
            elif self._batch is batch:
                self._abandon(batch)
        finally:
            self._lock.release()

    def _abandon(self, batch: Batch) -> None:
        self._batch = None
        conn = self.conn()
        batch.error = sqlite3.OperationalError("the group's transaction was rolled back")
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        finally:
            batch.finish()

    def commit(self, batch: Batch, *, sync: bool = True) -> None:
        """Commit the open batch (the caller holds the lock) and wake its writers; in deferred
        mode also sync it, unless ``sync`` is false (then the caller does)."""
        self._batch = None
        conn = self.conn()
        try:
            self.file.check()  # not into a file that was removed: nobody would read it again
            conn.execute("COMMIT")
        except BaseException as exc:
            if durability.is_io_error(exc):
                durability.lost(f"a commit to {self.file.path}", exc)  # a server exits here
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

    def close(self) -> None:
        """Stop the checkpoints and the WAL syncs (the store closes the connections)."""
        if self.checkpointer is not None:
            self.checkpointer.stop()
        self._conn = None
        self.local = threading.local()
        if self.wal_sync is not None:
            self.wal_sync.close()
