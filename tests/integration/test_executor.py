"""The server's executors for the hot verbs (``tenure.server.runtime.executor``), on real databases.

``GroupExecutor`` (SQLite): the calls waiting at one moment run in one group commit on the
writer thread; each call's result or error reaches its own caller, and only once the group's
commit is durable (another connection already sees it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tenure import LeaseHeld, Service
from tenure.server.runtime import loop_executor
from tenure.server.runtime.executor import GroupExecutor
from tenure.store.sqlite.durable.sync_process import SyncProcess
from tenure.store.sqlite.store import SqliteStore


@pytest.fixture
def sqlite_service(tmp_path: Any) -> Any:
    store = SqliteStore(tmp_path / "t.db")
    yield Service(store)
    store.close()


def test_a_moment_of_calls_shares_one_group_and_each_gets_its_own_answer(
    sqlite_service: Service, tmp_path: Any
) -> None:
    svc = sqlite_service
    groups: list[int] = []
    svc.listeners.append(lambda _events: groups.append(1))
    executor = GroupExecutor(svc)
    other = SqliteStore(tmp_path / "t.db")  # another connection: what is durable

    async def call(i: int) -> Any:
        key = "shared" if i % 2 else f"own-{i}"
        try:
            lease = await executor.run(lambda: svc.acquire(f"p{i}", key, ttl_ms=60_000))
        except LeaseHeld as held:
            return ("held", held.holder)
        record = other.get(key)  # the reply came after the commit: visible elsewhere
        assert record is not None and record.holder == f"p{i}"
        return ("won", lease.holder)

    async def main() -> list[Any]:
        return await asyncio.gather(*(call(i) for i in range(40)))

    try:
        outcomes = asyncio.run(main())
    finally:
        executor.close()
        other.close()
    won_shared = [o for i, o in enumerate(outcomes) if i % 2 and o[0] == "won"]
    assert len(won_shared) == 1  # one winner on the shared key, the others name it
    winner = won_shared[0][1]
    assert all(o == ("held", winner) for i, o in enumerate(outcomes) if i % 2 and o[0] == "held")
    assert all(o == ("won", f"p{i}") for i, o in enumerate(outcomes) if i % 2 == 0)
    assert 1 <= len(groups) < 40  # the 40 calls shared commits (listeners hear once per group)


def test_a_failing_call_fails_alone(sqlite_service: Service) -> None:
    svc = sqlite_service
    executor = GroupExecutor(svc)

    def broken() -> None:
        with svc.store.key_tx("b") as tx:
            tx.append([])
            raise KeyError("a bug")

    async def main() -> list[Any]:
        return await asyncio.gather(
            executor.run(lambda: svc.acquire("alice", "a").key),
            executor.run(broken),
            executor.run(lambda: svc.acquire("alice", "c").key),
            return_exceptions=True,
        )

    try:
        a, b, c = asyncio.run(main())
    finally:
        executor.close()
    assert (a, c) == ("a", "c")
    assert isinstance(b, KeyError)
    assert svc.get("a").holder == svc.get("c").holder == "alice"


def test_a_failed_commit_fails_every_call_of_its_group(sqlite_service: Service) -> None:
    svc = sqlite_service
    executor = GroupExecutor(svc)
    store = svc.store
    assert isinstance(store, SqliteStore)
    real_commit = store.writer.commit

    def failing_commit(batch: Any, **_: Any) -> None:  # the disk refuses: the commit raises
        store.writer.conn().execute("ROLLBACK")
        batch.error = RuntimeError("disk full")
        batch.finish()
        store.writer._batch = None
        raise RuntimeError("disk full")

    async def main() -> list[Any]:
        store.writer.commit = failing_commit  # type: ignore[method-assign]
        first = await asyncio.gather(
            executor.run(lambda: svc.acquire("alice", "a")),
            executor.run(lambda: svc.acquire("bob", "b")),
            return_exceptions=True,
        )
        store.writer.commit = real_commit  # type: ignore[method-assign]
        return first

    try:
        results = asyncio.run(main())
        assert all(isinstance(r, RuntimeError) for r in results)
        assert svc.list() == []  # nothing of the failed group is there
        again = asyncio.run(_one(executor, lambda: svc.acquire("alice", "a").holder))
        assert again == "alice"
    finally:
        executor.close()


async def _one(executor: GroupExecutor, call: Callable[[], Any]) -> Any:
    return await executor.run(call)


def test_close_finishes_what_is_queued_then_refuses(sqlite_service: Service) -> None:
    svc = sqlite_service
    executor = GroupExecutor(svc)

    async def main() -> list[Any]:
        calls = [executor.run(lambda i=i: svc.acquire("alice", f"k{i}").key) for i in range(5)]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0)  # the calls are queued, their group not committed yet
        closing = asyncio.get_running_loop().run_in_executor(None, executor.close)
        done = await asyncio.gather(*tasks)
        await closing
        with pytest.raises(RuntimeError, match="stopping"):
            await executor.run(lambda: None)
        return done

    assert asyncio.run(main()) == ["k0", "k1", "k2", "k3", "k4"]
    assert [lease.key for lease in svc.list()] == ["k0", "k1", "k2", "k3", "k4"]


def test_a_group_waits_for_another_thread_that_writes(sqlite_service: Service) -> None:
    """The loop never waits for the write lock: the group runs in the committer thread."""
    svc = sqlite_service
    executor = GroupExecutor(svc)
    store = svc.store
    assert isinstance(store, SqliteStore)
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.group():
            svc.acquire("bob", "held-by-thread")
            holding.set()
            release.wait(5)

    async def main() -> Any:
        thread = threading.Thread(target=writer)
        thread.start()
        holding.wait(5)
        call = asyncio.ensure_future(executor.run(lambda: svc.acquire("alice", "k").holder))
        await asyncio.sleep(0.05)
        assert not call.done()  # queued behind the other thread's group, loop still free
        release.set()
        holder = await call
        thread.join()
        return holder

    try:
        assert asyncio.run(main()) == "alice"
    finally:
        executor.close()
    assert svc.get("held-by-thread").holder == "bob"


def test_a_group_that_cannot_begin_fails_its_calls_and_the_next_one_works(
    sqlite_service: Service,
) -> None:
    svc = sqlite_service
    store = svc.store
    assert isinstance(store, SqliteStore)
    executor = GroupExecutor(svc)
    real = store.writer.try_group
    failures = [sqlite3.OperationalError("disk I/O error")]

    def try_group() -> Any:
        if failures:
            raise failures.pop()
        return real()

    store.writer.try_group = try_group  # type: ignore[method-assign]

    async def main() -> tuple[list[Any], str]:
        first = await asyncio.gather(
            executor.run(lambda: svc.acquire("alice", "a")),
            executor.run(lambda: svc.acquire("bob", "b")),
            return_exceptions=True,
        )
        then = await executor.run(lambda: svc.acquire("alice", "a").holder)
        return first, then

    try:
        first, then = asyncio.run(main())
    finally:
        executor.close()
    assert [type(r) for r in first] == [sqlite3.OperationalError] * 2
    assert then == "alice"


def test_the_server_freezes_what_it_built_at_start(tmp_path: Any) -> None:
    """Start-up objects stay out of the cyclic collector's full passes (gc.freeze)."""
    import gc

    from fastapi.testclient import TestClient

    from tenure.server.http.app import create_app
    from tenure.settings import Settings

    gc.unfreeze()
    app = create_app(Settings.from_env(db=f"sqlite:///{tmp_path}/t.db"))
    try:
        with TestClient(app):
            assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


class Traced:
    """A GroupExecutor whose calls are traced: ``submit(name, call, key, acquire)`` sends
    ``call`` through ``executor.call``, noting when it runs (``ran:name``) and when it is
    answered (``answered:name``, with its result or its error's class in ``answers``)."""

    def __init__(self, service: Service) -> None:
        self.executor = GroupExecutor(service)
        self.trace: list[str] = []
        self.answers: dict[str, Any] = {}

    def submit(self, name: str, call: Callable[[], Any], key: str, acquire: bool) -> None:
        def run() -> Any:
            self.trace.append(f"ran:{name}")
            return call()

        def answer(ok: bool, value: Any) -> None:
            self.trace.append(f"answered:{name}")
            self.answers[name] = value if ok else type(value).__name__

        self.executor.call(run, key, answer, acquire)

    def run(self, scenario: Callable[[], Any]) -> None:
        try:
            asyncio.run(scenario())
        finally:
            self.executor.close()


async def _until(answers: dict[str, Any], n: int) -> None:
    for _ in range(500):
        if len(answers) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"only {sorted(answers)} were answered")


def test_the_holders_calls_go_ahead_of_contenders_and_are_answered_before_they_run(
    sqlite_service: Service,
) -> None:
    svc, traced = sqlite_service, Traced(sqlite_service)
    submit, trace, answers = traced.submit, traced.trace, traced.answers

    async def main() -> None:
        submit("alice", lambda: svc.acquire("alice", "k", ttl_ms=60_000), "k", True)
        await _until(answers, 1)
        submit("bob", lambda: svc.acquire("bob", "k"), "k", True)  # refused: k is contended
        await _until(answers, 2)
        trace.clear()
        token = answers["alice"].token
        # one turn of the loop: two contenders, then the holder's renewal and another key
        submit("carol", lambda: svc.acquire("carol", "k"), "k", True)
        submit("dave", lambda: svc.acquire("dave", "k"), "k", True)
        submit("renew", lambda: svc.renew("alice", "k", token), "k", False)
        submit("other", lambda: svc.acquire("erin", "elsewhere"), "elsewhere", True)
        await _until(answers, 6)

    traced.run(main)
    assert answers["bob"] == answers["carol"] == answers["dave"] == "LeaseHeld"
    assert answers["renew"].token == answers["alice"].token and answers["other"].holder == "erin"
    assert trace.index("answered:renew") < trace.index("ran:carol")  # durable and answered first
    assert trace.index("answered:other") < trace.index("ran:carol")  # (uncontended key: ahead)
    assert trace.index("ran:carol") < trace.index("ran:dave")  # contenders keep their order


def test_acquisitions_of_keys_nobody_contends_keep_their_turn(sqlite_service: Service) -> None:
    svc, traced = sqlite_service, Traced(sqlite_service)
    submit, trace, answers = traced.submit, traced.trace, traced.answers

    async def main() -> None:
        submit("a", lambda: svc.acquire("alice", "a"), "a", True)
        await _until(answers, 1)
        submit("b", lambda: svc.acquire("bob", "b"), "b", True)
        submit("renew", lambda: svc.renew("alice", "a", answers["a"].token), "a", False)
        submit("c", lambda: svc.acquire("carol", "c"), "c", True)
        await _until(answers, 4)

    traced.run(main)
    ran = [t for t in trace if t.startswith("ran:")]
    assert ran == ["ran:a", "ran:b", "ran:renew", "ran:c"]
    assert trace.index("answered:b") > trace.index("ran:c")  # one group: answered together


def test_a_key_is_contended_only_for_a_while(
    sqlite_service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_executor, "CONTENDED_S", 0.2)
    svc, traced = sqlite_service, Traced(sqlite_service)
    submit, trace, answers = traced.submit, traced.trace, traced.answers

    async def main() -> None:
        submit("alice", lambda: svc.acquire("alice", "k", ttl_ms=60_000), "k", True)
        await _until(answers, 1)
        submit("bob", lambda: svc.acquire("bob", "k"), "k", True)
        await _until(answers, 2)
        await asyncio.sleep(0.3)  # no refusal since: k is no longer contended
        trace.clear()
        submit("carol", lambda: svc.acquire("carol", "k"), "k", True)
        submit("renew", lambda: svc.renew("alice", "k", answers["alice"].token), "k", False)
        await _until(answers, 4)

    traced.run(main)
    assert [t for t in trace if t.startswith("ran:")] == ["ran:carol", "ran:renew"]


def test_contenders_of_different_keys_share_a_group_one_per_key(sqlite_service: Service) -> None:
    svc, traced = sqlite_service, Traced(sqlite_service)
    submit, trace, answers = traced.submit, traced.trace, traced.answers

    async def main() -> None:
        for key in ("k", "j"):
            submit(
                f"hold-{key}", lambda key=key: svc.acquire("alice", key, ttl_ms=60_000), key, True
            )
        await _until(answers, 2)
        for key in ("k", "j"):  # refused: both keys are contended
            submit(f"bob-{key}", lambda key=key: svc.acquire("bob", key), key, True)
        await _until(answers, 4)
        trace.clear()
        submit("carol-k", lambda: svc.acquire("carol", "k"), "k", True)
        submit("dave-k", lambda: svc.acquire("dave", "k"), "k", True)
        submit("carol-j", lambda: svc.acquire("carol", "j"), "j", True)
        await _until(answers, 7)

    traced.run(main)
    assert all(answers[name] == "LeaseHeld" for name in ("carol-k", "dave-k", "carol-j"))
    ran = [t for t in trace if t.startswith("ran:")]
    assert ran == ["ran:carol-k", "ran:carol-j", "ran:dave-k"]
    assert trace.index("answered:carol-k") > trace.index("ran:carol-j")  # one group


def test_a_group_that_commits_during_a_sync_is_synced_next_by_the_committer_itself(
    sqlite_service: Service,
) -> None:
    """The committer syncs again at once for a group committed while it synced (no sync job
    queued by the loop for it), and the first group is answered before that second sync ends."""
    svc, executor = sqlite_service, GroupExecutor(sqlite_service, sync_process=False)
    gate, second_sync = threading.Event(), threading.Event()
    syncs: list[int] = []
    jobs: list[str] = []
    real_sync, real_run = executor._groups.sync, executor._committer.run

    def sync() -> None:
        syncs.append(executor._seq)
        if len(syncs) == 1:
            gate.wait(10)  # the first sync lasts until the second group has committed
        elif len(syncs) == 2:
            second_sync.wait(10)  # ... and the second until the first group was answered
        real_sync()

    def run(loop: Any, work: Any, then: Any) -> None:
        jobs.append(getattr(work, "func", work).__name__)
        real_run(loop, work, then)

    async def main() -> list[str]:
        answered: list[str] = []
        first = executor.submit(lambda: svc.acquire("alice", "a").holder, "a")
        first.add_done_callback(lambda _: (answered.append("alice"), second_sync.set()))
        while not syncs:
            await asyncio.sleep(0.001)
        second = executor.submit(lambda: svc.acquire("bob", "b").holder, "b")
        while executor._seq < 2:  # the second group committed during the first sync
            await asyncio.sleep(0.001)
        gate.set()
        assert await asyncio.wait_for(first, 10) == "alice"
        assert await asyncio.wait_for(second, 10) == "bob"
        answered.append("bob")
        return answered

    executor._groups.sync = sync  # type: ignore[method-assign]
    executor._committer.run = run  # type: ignore[method-assign]
    try:
        assert asyncio.run(main()) == ["alice", "bob"]
    finally:
        executor.close()
    assert syncs == [1, 2]  # two syncs, the second covering the second group
    assert jobs == ["_sync"]  # in one job of the committer


def _no_sync_in_process() -> None:
    raise AssertionError("the WAL was synced in the server's process")


def test_the_wal_is_synced_by_the_syncer_process_which_ends_with_the_executor(
    sqlite_service: Service,
) -> None:
    svc, executor = sqlite_service, GroupExecutor(sqlite_service)
    assert executor._process is not None
    pid = executor._process.pid
    executor._groups.sync = _no_sync_in_process  # type: ignore[method-assign]

    async def main() -> list[Any]:
        calls = [executor.run(lambda i=i: svc.acquire(f"p{i}", f"k{i}").token) for i in range(20)]
        return await asyncio.gather(*calls)

    try:
        assert asyncio.run(main()) == [1] * 20
    finally:
        executor.close()
    assert not _alive(pid)


def test_if_the_syncer_process_dies_the_committer_thread_syncs(sqlite_service: Service) -> None:
    svc, executor = sqlite_service, GroupExecutor(sqlite_service)
    assert executor._process is not None
    real_sync, syncs = executor._groups.sync, []

    def sync() -> None:
        syncs.append(1)
        real_sync()

    executor._groups.sync = sync  # type: ignore[method-assign]

    async def main() -> list[Any]:
        first = await executor.run(lambda: svc.acquire("alice", "a").holder)
        assert executor._process is not None
        os.kill(executor._process.pid, signal.SIGSTOP)  # asked, it never answers: then dies
        later = [
            asyncio.ensure_future(executor.run(lambda i=i: svc.acquire(f"p{i}", f"k{i}").holder))
            for i in range(5)
        ]
        for _ in range(2000):  # their group committed, its sync asked of the process
            if executor._requested >= 2:
                break
            await asyncio.sleep(0.01)
        assert executor._requested >= 2
        os.kill(executor._process.pid, signal.SIGKILL)
        return [first, *await asyncio.wait_for(asyncio.gather(*later), 20)]

    try:
        assert asyncio.run(main()) == ["alice", "p0", "p1", "p2", "p3", "p4"]
    finally:
        executor.close()
    assert executor._syncer is None and syncs  # the thread took over
    assert [lease.key for lease in svc.list()] == ["a", "k0", "k1", "k2", "k3", "k4"]


def test_a_sync_the_syncer_process_reports_failed_fails_the_calls_it_covers(
    sqlite_service: Service, tmp_path: Any
) -> None:
    svc, executor = sqlite_service, GroupExecutor(sqlite_service)
    assert executor._process is not None
    executor._process.close()
    executor._process = executor._syncer = SyncProcess(tmp_path / "missing-wal")

    async def main() -> list[Any]:
        calls = [executor.run(lambda i=i: svc.acquire(f"p{i}", f"k{i}")) for i in range(3)]
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        results = asyncio.run(main())
    finally:
        executor.close()
    assert [type(r) for r in results] == [sqlite3.OperationalError] * 3
    assert all("syncing the commit failed" in str(r) for r in results)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
