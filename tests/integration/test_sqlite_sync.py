"""Deferred WAL syncs (``tenure.store.sqlite.durable.wal_sync``) on real SQLite files.

A server's store commits without syncing and syncs the WAL before anyone hears of the commit:
ordinary writes still return only once synced; the server's groups are answered only after a
sync that began once they were committed, and the next group may commit while a sync runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tenure import Service
from tenure.server.runtime.executor import GroupExecutor
from tenure.store.sqlite.durable.wal_sync import WalSync
from tenure.store.sqlite.store import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SqliteStore(tmp_path / "t.db")
    yield s
    s.close()


def test_ordinary_writes_are_synced_before_they_return(store: SqliteStore) -> None:
    svc = Service(store)
    wal = store.writer.defer_sync()
    writer = store.writer.conn()
    assert writer.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL: COMMIT only writes
    before = wal.syncs
    svc.acquire("alice", "a")
    svc.release("alice", "a")
    assert wal.syncs == before + 2  # one sync per commit, inside the call
    assert store.writer.defer_sync() is wal  # once per store


def test_a_store_opened_with_synchronous_normal_does_not_sync(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "n.db", synchronous="NORMAL")
    try:
        wal = store.writer.defer_sync()
        Service(store).acquire("alice", "a")
        assert wal.needed is False and wal.syncs == 0  # the durability the user chose
    finally:
        store.close()


def test_a_store_not_in_wal_mode_keeps_syncing_in_commit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "d.db")
    try:
        writer = store.writer.conn()
        assert writer.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
        wal = store.writer.defer_sync()  # as on a filesystem where SQLite cannot use WAL
        assert wal.needed is False
        assert writer.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: COMMIT syncs
        Service(store).acquire("alice", "a")
        assert wal.syncs == 0 and not os.path.exists(f"{tmp_path / 'd.db'}-wal")
    finally:
        store.close()


def test_a_failed_sync_fails_the_write(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = Service(store)
    wal = store.writer.defer_sync()

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    with pytest.raises(sqlite3.OperationalError, match="syncing the commit failed"):
        svc.acquire("alice", "a")
    monkeypatch.undo()
    svc.acquire("bob", "b")  # the store goes on once the disk does
    assert wal.syncs >= 1


def test_the_wal_file_is_reopened_when_it_was_replaced(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    wal_path = Path(f"{db}-wal")
    wal_path.write_bytes(b"one")
    wal = WalSync(db)
    try:
        wal.sync()
        first = wal._fd
        assert first is not None and os.fstat(first).st_ino == os.stat(wal_path).st_ino
        wal_path.unlink()
        wal_path.write_bytes(b"two")  # a new file (a new inode) under the same name
        wal.sync()
        assert wal._fd is not None and os.fstat(wal._fd).st_ino == os.stat(wal_path).st_ino
        assert wal.syncs == 2
    finally:
        wal.close()


Sync = tuple[set[str], set[str], float]  # keys committed at its start, at its end; end time


def _slow_syncs(store: SqliteStore, tmp_path: Path) -> tuple[list[Sync], threading.Event]:
    """Make the WAL's syncs take 0.15 s, recording what was committed when each began and
    ended (seen from another connection)."""
    wal = store.writer.wal_sync
    assert wal is not None
    other = sqlite3.connect(tmp_path / "t.db", check_same_thread=False)
    real_sync = wal.sync
    syncs: list[Sync] = []
    in_sync = threading.Event()

    def committed() -> set[str]:
        return {r[0] for r in other.execute("SELECT key FROM tenure_leases")}

    def slow_sync() -> None:
        at_start = committed()
        in_sync.set()
        time.sleep(0.15)  # a slow disk: calls keep coming meanwhile
        real_sync()
        in_sync.clear()
        syncs.append((at_start, committed(), time.monotonic()))

    wal.sync = slow_sync  # type: ignore[method-assign]
    return syncs, in_sync


@pytest.mark.parametrize("during", [3, 1])
def test_groups_are_answered_after_a_sync_that_covers_them(
    store: SqliteStore, tmp_path: Path, during: int
) -> None:
    """3 calls are being synced; ``during`` more arrive. As many or more: they commit while that
    sync runs (the loop does not wait for the disk). Fewer: they wait for it (a bigger group).
    Syncs in the committer thread (the fallback), whose syncs this test can slow down."""
    svc = Service(store)
    executor = GroupExecutor(svc, sync_process=False)
    syncs, in_sync = _slow_syncs(store, tmp_path)
    answered: dict[str, float] = {}

    async def call(key: str) -> None:
        await executor.run(lambda: svc.acquire("alice", key))
        answered[key] = time.monotonic()

    async def main() -> None:
        first = [asyncio.ensure_future(call(f"a{i}")) for i in range(3)]
        while not in_sync.is_set():  # the first group is being synced
            await asyncio.sleep(0.005)
        await asyncio.gather(*(call(f"b{i}") for i in range(during)))
        await asyncio.gather(*first)

    try:
        asyncio.run(main())
    finally:
        executor.close()
    assert len(answered) == 3 + during
    for key, at in answered.items():  # a sync that began after its commit ended before
        assert any(key in seen and end <= at for seen, _, end in syncs), key
    first_start, first_end, _ = syncs[0]
    b_keys = {f"b{i}" for i in range(during)}
    assert not b_keys & first_start  # b came after the first sync began
    assert (b_keys <= first_end) is (during >= 3)  # committed while it ran, or waited for it
    assert max(answered[f"a{i}"] for i in range(3)) <= min(answered[k] for k in b_keys)


@pytest.mark.parametrize(
    ("error", "kind", "says"),
    [
        (OSError(28, "No space left on device"), sqlite3.OperationalError, "syncing the commit"),
        (RuntimeError("a bug"), RuntimeError, "a bug"),  # never leaves the calls waiting
    ],
)
def test_a_failed_sync_fails_every_call_it_covers(
    store: SqliteStore,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    kind: type[Exception],
    says: str,
) -> None:
    svc = Service(store)
    executor = GroupExecutor(svc, sync_process=False)  # the syncer process: test_executor.py

    def broken(fd: int) -> None:
        raise error

    async def main() -> list[Any]:
        monkeypatch.setattr(os, "fdatasync", broken)
        failed = await asyncio.gather(
            executor.run(lambda: svc.acquire("alice", "a")),
            executor.run(lambda: svc.acquire("bob", "b")),
            return_exceptions=True,
        )
        monkeypatch.undo()
        ok = await executor.run(lambda: svc.acquire("carol", "c").holder)
        return [*failed, ok]

    try:
        results = asyncio.run(main())
    finally:
        executor.close()
    assert all(isinstance(r, kind) for r in results[:2])
    assert says in str(results[0])
    assert results[2] == "carol"


def test_with_the_syncer_process_no_call_is_answered_before_a_sync_covers_it(
    store: SqliteStore, tmp_path: Path
) -> None:
    """The syncer process stopped (a disk that does not answer): the calls committed meanwhile
    are not answered, the loop goes on committing the next group, and every call is answered
    once the helper syncs again."""
    svc = Service(store)
    executor = GroupExecutor(svc)
    other = sqlite3.connect(tmp_path / "t.db")

    def committed(*keys: str) -> bool:
        rows = other.execute("SELECT key FROM tenure_leases").fetchall()
        return set(keys) <= {r[0] for r in rows}

    async def until(*keys: str) -> None:
        for _ in range(1000):
            if committed(*keys):
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{keys} never committed")

    def calls(prefix: str) -> list[asyncio.Future[Any]]:
        return [
            asyncio.ensure_future(executor.run(lambda k=f"{prefix}{i}": svc.acquire("al", k).key))
            for i in range(4)
        ]

    async def main() -> list[Any]:
        await executor.run(lambda: svc.acquire("alice", "a"))  # the helper is attached
        assert executor._process is not None
        pid = executor._process.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            first = calls("b")
            await until("b0", "b1", "b2", "b3")
            second = calls("c")  # as many as the sync on its way covers: they do not wait
            await until("c0", "c1", "c2", "c3")
            await asyncio.sleep(0.2)
            assert not any(f.done() for f in first + second)
        finally:
            os.kill(pid, signal.SIGCONT)
        return await asyncio.wait_for(asyncio.gather(*first, *second), 20)

    try:
        keys = asyncio.run(main())
    finally:
        executor.close()
        other.close()
    assert keys == ["b0", "b1", "b2", "b3", "c0", "c1", "c2", "c3"]
