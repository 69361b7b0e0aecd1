"""The server's executor for PostgreSQL (:class:`PgGroupExecutor`).

Group commits on PostgreSQL: the calls that queue while the group thread is busy
form the next group, one transaction on one connection: its keys locked ahead in one round trip,
its writes, events and COMMIT in one more (:meth:`tenure.store.base.Store.group`);
one group thread takes them as they come. When the last group had company and fewer calls are
queued than it held, the thread waits up to :data:`GATHER_S` for as many: a group's transaction
costs about the same CPU (in PostgreSQL and in the server) whatever its size, so on a busy
machine fuller groups leave more of it to the calls (side by side, one server and 16 clients:
groups of 8 → 16 calls, the cycle 1.39x, the server's CPU a call 112 → 90 µs; with two and
three servers on one database as much; bench/results/2026-11-26-servers.md).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from tenure.errors import Unavailable
from tenure.server.runtime.calls import Answer, Calls, Job, Queued, answer_all, log, outcome
from tenure.service.leases import Service
from tenure.store.base import ThreadGroups
from tenure.store.errors import unreachable

MAX_PG_GROUP = 64  # calls of one group on PostgreSQL
GATHER_S = 0.001  # how long a group on PostgreSQL waits for company, at most (s)


class PgGroupExecutor(Calls):
    """Group commits for the hot verbs on PostgreSQL, in one group thread: it takes the call
    that arrives and every call queued behind it (up to :data:`MAX_PG_GROUP`) and runs them
    one after the other in one transaction on one connection
    (:meth:`tenure.store.base.Store.group`). Its first round trip locks the keys of its calls
    (one statement, in key order) and reads the instant; its last sends every lease saved (one
    statement), the notices, the events (one statement) and the ``COMMIT``: two round trips and
    one fsync for
    the whole group. The thread hands the outcomes to the loop, which sends the replies, and
    takes the calls that queued meanwhile at once, without waiting for the loop (busy reading
    those very requests, often). If the group's transaction fails (an error of the database,
    a deadlock with another server's group), nothing of it happened: each of its calls runs
    again on its own. Before a group starts, the thread may wait a little for company
    (:meth:`_take`)."""

    def __init__(self, service: Service, groups: ThreadGroups | None = None) -> None:
        found = groups or service.store.group_commit()
        assert isinstance(found, ThreadGroups)
        self._service, self._groups = service, found
        self._queue: queue.SimpleQueue[Queued | None] = queue.SimpleQueue()  # None: stop
        self._closed = False
        self._closing = threading.Lock()  # no call is queued once close() has begun
        self._thread: threading.Thread | None = None
        self._last = 1  # calls of the last group

    def call(
        self, call: Callable[[], Any], key: str | None, answer: Answer, acquire: bool = False
    ) -> None:
        with self._closing:
            if self._closed:
                raise RuntimeError("the server is stopping")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="tenure-group", daemon=True
                )
                self._thread.start()
            self._queue.put(((call, answer, None), key, asyncio.get_running_loop()))

    def close(self) -> None:
        """Refuse new calls, run those queued and running (from another thread): the group
        thread stops at the end of the queue."""
        with self._closing:  # every call queued is ahead of the stop mark: none is left waiting
            self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()

    def _serve(self) -> None:
        """The group thread: a call and every call queued behind it are a group; again."""
        while (first := self._queue.get()) is not None:
            taken = self._take([first])
            jobs = [job for job, _, _ in taken]
            try:
                outcomes = self._run_group(jobs, [key for _, key, _ in taken if key is not None])
            except BaseException as exc:  # a bug: still fail the calls, never leave them waiting
                outcomes = [(False, exc)] * len(jobs)
            self._post(taken, outcomes)

    def _post(self, taken: list[Queued], outcomes: list[tuple[bool, Any]]) -> None:
        """Hand the outcomes to the loops of their calls (one, in a server), to be answered."""
        loops = dict.fromkeys(loop for _, _, loop in taken)
        for loop in loops:
            mine = [i for i, (_, _, of) in enumerate(taken) if of is loop]
            answer = [taken[i][0] for i in mine], [outcomes[i] for i in mine]
            try:
                loop.call_soon_threadsafe(answer_all, *answer)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                log.warning("%d calls ran after their event loop closed", len(mine))

    def _take(self, taken: list[Queued]) -> list[Queued]:
        """``taken`` and the calls queued behind, up to :data:`MAX_PG_GROUP`; if the last
        group had company and these are fewer than it held, the calls that arrive within
        :data:`GATHER_S` too, until there are as many as it held (the calls of a busy moment
        arrive spread over a millisecond or so, while the loop reads them: together they pay
        for one transaction, not two or three)."""
        taken = self._drain(taken)
        want = min(self._last, MAX_PG_GROUP)
        if len(taken) < want and self._last > 1:
            end = time.monotonic() + GATHER_S
            while len(taken) < want and (left := end - time.monotonic()) > 0:
                try:
                    item = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if not self._took(taken, item):
                    break
            taken = self._drain(taken)  # and whatever queued meanwhile
        self._last = len(taken)
        return taken

    def _drain(self, taken: list[Queued]) -> list[Queued]:
        """``taken`` and the calls queued behind, up to :data:`MAX_PG_GROUP` (none waited
        for)."""
        while len(taken) < MAX_PG_GROUP:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if not self._took(taken, item):
                break
        return taken

    def _took(self, taken: list[Queued], item: Queued | None) -> bool:
        """Add ``item`` to ``taken``; false for the closing mark (put back: it comes after
        these)."""
        if item is None:
            self._queue.put(None)
            return False
        taken.append(item)
        return True

    def _run_group(self, jobs: list[Job], keys: list[str]) -> list[tuple[bool, Any]]:
        """In the group thread: the calls in one transaction, or each alone if it fails. The
        group's first round trip locks ``keys`` (in key order). Its calls' principals were
        authenticated before they were queued (:mod:`tenure.server.http.auth`): no token is looked
        up while the group holds its locks."""
        try:
            with self._service.deferring() as events, self._groups.group(keys):
                outcomes = [outcome(call) for call, _, _ in jobs]
        except Exception as exc:  # the group's transaction is lost: nothing of it happened
            if isinstance(exc, Unavailable) and exc.outcome == "unknown":
                return [(False, exc)] * len(jobs)  # unless its COMMIT may have: never run again
            lost = unreachable(exc)
            if lost is not None:  # no database: alone, each would only wait again
                return [(False, lost)] * len(jobs)
            return [outcome(call) for call, _, _ in jobs]  # each commits (and announces)
        self._service.committed(events)
        return outcomes
