"""Where the server runs the service's blocking calls for the hot verbs.

:class:`GroupExecutor` (SQLite): one writer thread takes every call that is waiting, runs them one
after the other inside one :meth:`Service.group` (one transaction, a savepoint each, one durable
commit for all), and only then hands the results back to the event loop in one go. So a moment's
requests cost one thread hand-off and one fsync together, instead of a thread hop, a lock
hand-over and a wait for someone else's commit each; and only two threads (the event loop and the
writer) compete for the GIL. No reply leaves before the commit that holds it is durable, a call
that fails rolls back alone, a commit that fails fails every call of its group.

:class:`PoolExecutor` (PostgreSQL): a thread pool, each call its own transaction on its own
pooled connection, so calls on different keys commit in parallel.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from tenure.service import Service

T = TypeVar("T")
MAX_GROUP = 128  # calls of one group, at most (the rest wait for the next one)
Job = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


class Executor(Protocol):
    async def run(self, call: Callable[[], T]) -> T: ...

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """Inside a call: ``compute()``, shared by the calls of one group (one instant), such
        as the principal of a token that several requests of the moment carry."""
        ...

    def close(self) -> None: ...


class PoolExecutor:
    def __init__(self, workers: int = 32) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="tenure-hot")

    async def run(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def once(self, key: str, compute: Callable[[], T]) -> T:
        return compute()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class GroupExecutor:
    def __init__(self, service: Service) -> None:
        self._service = service
        self._jobs: deque[Job] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._memo: dict[str, Any] = {}  # of the group running now (writer thread only)
        self._thread = threading.Thread(target=self._work, name="tenure-writer", daemon=True)
        self._thread.start()

    async def run(self, call: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the server is stopping")
            self._jobs.append((call, future, loop))
            self._ready.notify()
        return await future

    def once(self, key: str, compute: Callable[[], T]) -> T:
        if key not in self._memo:
            self._memo[key] = compute()  # an exception is not remembered: the next call retries
        value: T = self._memo[key]
        return value

    def close(self) -> None:
        """Finish what is queued, then stop the writer thread."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join()

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._jobs and not self._closed:
                    self._ready.wait()
                if not self._jobs:
                    return  # closed and drained
                jobs = [self._jobs.popleft() for _ in range(min(len(self._jobs), MAX_GROUP))]
            self._run_group(jobs)

    def _run_group(self, jobs: list[Job]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        self._memo.clear()
        try:
            with self._service.group():
                for call, _, _ in jobs:
                    try:
                        outcomes.append((True, call()))
                    except Exception as exc:  # the call's own error: its savepoint is undone
                        outcomes.append((False, exc))
        except Exception as exc:  # the group could not begin or commit: every call fails
            outcomes = [(False, exc)] * len(jobs)
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]]
        by_loop = {}
        for (_, future, loop), (ok, value) in zip(jobs, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, ok, value))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, settled)


def _settle(settled: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in settled:
        if future.done():  # the request was cancelled (its client went away)
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
