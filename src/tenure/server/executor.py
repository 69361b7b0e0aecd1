"""Where the server runs the service's blocking calls for the hot verbs.

:class:`GroupExecutor` (SQLite): the calls that arrive in one turn of the event loop form a
group. The loop opens the group's transaction, runs the calls one after the other right there
(a savepoint each: a call that fails rolls back alone; SQLite statements take microseconds), and
hands the commit to a committer thread, so the loop goes on serving while the disk syncs; the
calls that arrive meanwhile form the next group. Every reply of a group is sent once its commit
is durable, never before; a commit that fails fails every call of its group. So a moment's
requests share one fsync and no thread hand-off each, and the GIL is not passed back and forth
between the loop and a worker thread for every statement. When another thread of the server
holds the write lock (a FastAPI route, the reaper) the loop does not wait for it: that group runs
in the committer thread instead.

:class:`PoolExecutor` (PostgreSQL): a thread pool, each call its own transaction on its own
pooled connection, so calls on different keys commit in parallel.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from tenure.core.models import EventDraft, Principal
from tenure.service import Service
from tenure.store.sqlite import Batch, SqliteStore

T = TypeVar("T")
MAX_KNOWN = 10_000  # tokens whose principal the executor keeps (then it starts over)
MAX_GROUP = 128  # calls of one group, at most (the rest wait for the next one)
Job = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


class Executor(Protocol):
    def submit(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """On the event loop: run ``call`` (in its turn); the future has its outcome."""
        ...

    async def run(self, call: Callable[[], T]) -> T: ...

    def principal(self, token: str, authenticate: Callable[[], Principal]) -> Principal:
        """Inside a call: the principal of ``token``, ``authenticate()`` unless known."""
        ...

    def close(self) -> None: ...


class PoolExecutor:
    def __init__(self, workers: int = 32) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="tenure-hot")

    def submit(self, call: Callable[[], T]) -> asyncio.Future[T]:
        return asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def run(self, call: Callable[[], T]) -> T:
        return await self.submit(call)

    def principal(self, token: str, authenticate: Callable[[], Principal]) -> Principal:
        return authenticate()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class GroupExecutor:
    """Group commits for the hot verbs on SQLite; every method but :meth:`close` runs on the
    event loop."""

    def __init__(self, service: Service) -> None:
        assert isinstance(service.store, SqliteStore)
        self._service, self._store = service, service.store
        self._jobs: list[Job] = []
        self._busy = False  # a group is open (running or committing)
        self._flushing = False  # a flush is scheduled
        self._closed = False
        self._idle = threading.Event()
        self._idle.set()
        self._known: dict[str, Principal] = {}  # token -> principal, at _auth_version
        self._auth_version = -1
        self._committer = ThreadPoolExecutor(1, thread_name_prefix="tenure-commit")

    def submit(self, call: Callable[[], T]) -> asyncio.Future[T]:
        if self._closed:
            raise RuntimeError("the server is stopping")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.append((call, future, loop))
        self._idle.clear()
        if not self._busy and not self._flushing:
            self._flushing = True
            loop.call_soon(self._flush)  # after this turn of the loop: the moment's requests
        return future

    async def run(self, call: Callable[[], T]) -> T:
        return await self.submit(call)

    def principal(self, token: str, authenticate: Callable[[], Principal]) -> Principal:
        """Known tokens skip the hash and the lookup while no principal or token changed
        (the store's ``auth_version``, read once per group: a revocation committed before a
        group began is seen by all of it). Refusals are not remembered."""
        known = self._known.get(token)
        if known is None:
            if len(self._known) >= MAX_KNOWN:
                self._known.clear()
            known = self._known[token] = authenticate()
        return known

    def close(self) -> None:
        """Refuse new calls, wait for those queued and running (from another thread)."""
        self._closed = True
        self._idle.wait()
        self._committer.shutdown(wait=True)

    def _flush(self) -> None:
        """Open a group and run the waiting calls in it right here on the event loop (no
        thread hand-off, no GIL ping-pong), then commit it in the committer thread while the
        loop goes on serving. If another thread is writing, the whole group runs there."""
        self._flushing = False
        if self._busy or not self._jobs:
            return
        jobs, self._jobs = self._jobs[:MAX_GROUP], self._jobs[MAX_GROUP:]
        self._busy = True
        loop = jobs[0][2]
        try:
            batch = self._store.try_group()
        except Exception as exc:  # BEGIN failed (the disk, another process's lock): all fail
            self._finish(jobs, [], exc)
            return
        if batch is None:  # the write lock is busy elsewhere: wait for it in the thread
            done = loop.run_in_executor(self._committer, self._run_group, jobs)
            done.add_done_callback(lambda f: self._finish(jobs, *f.result()))
            return
        try:
            with self._service.deferring() as events, self._store.joined(batch):
                outcomes = self._run_jobs(jobs)
        except BaseException as exc:  # not a call's own error (those are in outcomes)
            self._store.end_group(batch, commit=False)
            self._finish(jobs, [], exc if isinstance(exc, Exception) else RuntimeError(exc))
            raise
        commit = loop.run_in_executor(self._committer, self._commit, batch, events)
        commit.add_done_callback(lambda f: self._finish(jobs, outcomes, f.result()))

    def _run_jobs(self, jobs: list[Job]) -> list[tuple[bool, Any]]:
        version = self._store.auth_version()
        if version != self._auth_version:
            self._known.clear()
            self._auth_version = version
        outcomes: list[tuple[bool, Any]] = []
        for call, _, _ in jobs:
            try:
                outcomes.append((True, call()))
            except Exception as exc:  # the call's own error: its savepoint is undone
                outcomes.append((False, exc))
        return outcomes

    def _commit(self, batch: Batch, events: list[EventDraft]) -> Exception | None:
        """In the committer thread: commit the group, then announce what it appended."""
        try:
            self._store.end_group(batch, commit=True)
        except Exception as exc:  # every call of the group fails
            return exc
        self._service.committed(events)
        return None

    def _run_group(self, jobs: list[Job]) -> tuple[list[tuple[bool, Any]], Exception | None]:
        """In the committer thread, when the loop could not open the group itself."""
        try:
            with self._service.group():
                outcomes = self._run_jobs(jobs)
        except Exception as exc:
            return [], exc
        return outcomes, None

    def _finish(
        self, jobs: list[Job], outcomes: list[tuple[bool, Any]], failed: Exception | None
    ) -> None:
        """On the loop, once the group's commit is durable (or failed): answer every call."""
        if failed is not None:
            outcomes = [(False, failed)] * len(jobs)
        for (_, future, _), (ok, value) in zip(jobs, outcomes, strict=True):
            if future.done():  # the request was cancelled (its client went away)
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        self._busy = False
        if self._jobs:
            self._flush()
        else:
            self._idle.set()
