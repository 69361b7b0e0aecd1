"""The server's executor for SQLite (:class:`GroupExecutor`): group commits on the event loop.

Group commits on SQLite: the calls that arrive in one turn of the event loop form a
group. The loop opens the group's transaction, runs the calls one after the other right there
(a savepoint each: a call that fails rolls back alone; SQLite statements take microseconds) and
commits it, which in the store's deferred mode only writes the WAL
(:mod:`tenure.store.sqlite.durable.wal_sync`). A helper process
(:mod:`tenure.store.sqlite.durable.sync_helper`, asked through a pipe by
:class:`~tenure.store.sqlite.durable.sync_process.SyncProcess`) then syncs the WAL while the loop
goes on serving; if it cannot start or exits, the committer thread syncs instead: the calls that
arrive meanwhile form the next group, which may run and commit before that sync ends; one sync
covers every group committed before it began. Every reply of a group is sent once a sync that covers
it has returned, never before; a commit or sync that fails fails every call it covers; groups
that commit during a sync are asked of the helper at once (it reads them all and covers them
with its next sync), and the committer thread, when it syncs, syncs again at once for them
(handing what it covered to the loop as it goes). So a moment's requests share one fsync and no
thread hand-off each, the GIL is not passed back and forth between the loop and a worker thread
for every statement, and the loop does not wait for the disk between groups. While a sync is on
its way, the calls that queue wait for it to end unless they are already as many as it covers:
so groups stay large enough that their fixed costs (``BEGIN``, ``COMMIT``, a sync) do not eat
the CPU the calls need. When another thread of the server holds the write lock (a FastAPI
route, the reaper) the loop does not wait for it: that group runs in the committer thread
instead (:mod:`tenure.server.runtime.committer`). Under contention the holder goes first: an
acquisition of a key that refused one a moment ago waits while the other calls form a group of
their own, until that group is durable, then such contenders go one per key a group
(:meth:`GroupExecutor._take`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from tenure.core.models import EventDraft
from tenure.errors import LeaseHeld
from tenure.server.runtime.calls import Answer, Calls, Job, answer_all, log
from tenure.server.runtime.committer import Committer
from tenure.service.leases import Service
from tenure.store.base import LoopGroups, Syncer

MAX_KNOWN = 10_000  # contended keys the executor keeps (then it starts over)
MAX_GROUP = 128  # calls of one group, at most (the rest wait for the next one)
MAX_SYNCS = 16  # syncs in a row in the committer thread, at most (then: a turn of the loop)
CONTENDED_S = 0.5  # a key that refused an acquisition this recently (s) is contended
#: a committed group waiting for its sync: number, calls, their outcomes, the events appended
Written = tuple[int, list[Job], list[tuple[bool, Any]], list[EventDraft]]


class GroupExecutor(Calls):
    """Group commits for the hot verbs on SQLite; every method but :meth:`close` runs on the
    event loop."""

    def __init__(
        self, service: Service, groups: LoopGroups | None = None, *, sync_process: bool = True
    ) -> None:
        """``sync_process``: sync in the store's helper (:meth:`LoopGroups.syncer`, a process
        on SQLite), else (or if it cannot start, or goes away) in the committer thread."""
        found = groups or service.store.group_commit()
        assert isinstance(found, LoopGroups)
        self._service, self._groups = service, found
        self._process = found.syncer() if sync_process else None
        self._syncer = self._process  # None: the committer thread syncs
        self._requested = 0  # the last group the syncer was asked to cover
        self._jobs: list[Job] = []
        self._busy = False  # a group runs in the committer thread (the lock was taken)
        self._flushing = False  # a flush is scheduled
        self._written: deque[Written] = deque()  # committed groups waiting for a sync
        self._seq = 0  # groups committed so far (the last one's number)
        self._unsynced = 0  # calls in _written
        self._syncing = False  # a sync is on its way in the committer thread
        self._closed = False
        self._idle = threading.Event()
        self._idle.set()
        self._contended: dict[str, float] = {}  # key -> when it last refused an acquisition
        self._ahead = 0  # the last group that went ahead of contenders (they wait for its sync)
        self._committer = Committer()

    def call(
        self, call: Callable[[], Any], key: str | None, answer: Answer, acquire: bool = False
    ) -> None:
        if self._closed:
            raise RuntimeError("the server is stopping")
        self._jobs.append((call, answer, key if acquire else None))
        self._idle.clear()
        if not self._busy and not self._flushing:
            self._flushing = True  # after this turn of the loop: the moment's requests
            asyncio.get_running_loop().call_soon(self._flush)

    def close(self) -> None:
        """Refuse new calls, wait for those queued and running (from another thread)."""
        self._closed = True
        self._idle.wait()
        self._committer.close()
        if self._process is not None:
            self._process.close()

    def _flush(self) -> None:
        """Open a group and run the waiting calls in it right here on the event loop (no
        thread hand-off, no GIL ping-pong), commit it (which only writes the WAL) and leave
        its sync to the committer thread: the loop goes on serving, and the next group may run
        while this one is being synced. If another thread is writing, the whole group runs
        there instead."""
        self._flushing = False
        if self._busy or not self._jobs:
            return
        jobs, ahead = self._take()
        if not jobs:
            return  # they wait for a sync (whose end flushes again)
        loop = asyncio.get_running_loop()
        try:
            batch = self._groups.try_begin()
        except Exception as exc:  # BEGIN failed (the disk, another process's lock): all fail
            self._answer(jobs, [], exc)
            self._next(loop)
            return
        if batch is None:  # the write lock is busy elsewhere: wait for it in the thread
            self._busy = True
            run = partial(self._run_group, jobs)
            self._committer.run(loop, run, lambda done: self._group_done(jobs, *done))
            return
        try:
            with self._service.deferring() as events, self._groups.joined(batch):
                outcomes = self._run_jobs(jobs)
        except BaseException as exc:  # not a call's own error (those are in outcomes)
            self._groups.end(batch, commit=False)
            self._answer(jobs, [], exc if isinstance(exc, Exception) else RuntimeError(exc))
            raise
        self._contend(jobs, outcomes)
        try:
            self._groups.end(batch, commit=True)
        except Exception as exc:  # every call of the group fails
            self._answer(jobs, [], exc)
            self._next(loop)
            return
        self._seq += 1
        if ahead:  # contenders wait until this group is durable
            self._ahead = self._seq
        self._written.append((self._seq, jobs, outcomes, events))
        self._unsynced += len(jobs)
        self._sync_soon(loop)
        self._next(loop)

    def _take(self) -> tuple[list[Job], bool]:
        """The calls of the next group (none: they wait for the sync on its way), and whether
        they go ahead of contenders.

        Ordinarily every waiting call, unless a sync is on its way and fewer calls wait than it
        covers (then they wait for it: groups stay large enough for their fixed costs). But an
        acquisition of a *contended* key (one that refused an acquisition in the last
        ``CONTENDED_S``) waits behind the other calls: those go first in a group of their own,
        and the contenders wait until it is durable, then go one per key a group. So the
        holder's renewals and release, and the calls on other keys, are never stuck behind a
        stampede of contenders that will be refused, and the key is handed on sooner. Among the
        contenders of a key the order of arrival is kept."""
        jobs = self._jobs
        first, later = self._split(jobs) if self._contended else (jobs, [])
        if later:
            if first:
                self._jobs = first[MAX_GROUP:] + later
                return first[:MAX_GROUP], True
            ahead_unsynced = bool(self._written) and self._written[0][0] <= self._ahead
            if ahead_unsynced or len(later) < self._unsynced:
                return [], False
            return self._one_per_key(later), False
        if len(jobs) < self._unsynced:
            return [], False
        self._jobs = jobs[MAX_GROUP:]
        return jobs[:MAX_GROUP], False

    def _one_per_key(self, contenders: list[Job]) -> list[Job]:
        """The first contender of each key goes (the rest wait, in their order)."""
        taken: list[Job] = []
        keys: set[str | None] = set()
        self._jobs = []
        for job in contenders:
            if job[2] in keys or len(taken) >= MAX_GROUP:
                self._jobs.append(job)
            else:
                taken.append(job)
                keys.add(job[2])
        return taken

    def _split(self, jobs: list[Job]) -> tuple[list[Job], list[Job]]:
        """``jobs`` as (the others, the contenders), each in its order; keys no longer
        contended are forgotten."""
        now = time.monotonic()
        first: list[Job] = []
        later: list[Job] = []
        for job in jobs:
            key = job[2]
            since = None if key is None else self._contended.get(key)
            if key is not None and since is not None and now - since >= CONTENDED_S:
                del self._contended[key]
                since = None
            (first if since is None else later).append(job)
        return first, later

    def _contend(self, jobs: list[Job], outcomes: list[tuple[bool, Any]]) -> None:
        """Mark the keys whose acquisition the group refused as contended."""
        now = None
        for (_, _, key), (ok, value) in zip(jobs, outcomes, strict=True):
            if key is not None and not ok and isinstance(value, LeaseHeld):
                if len(self._contended) >= MAX_KNOWN:
                    self._contended.clear()
                self._contended[key] = now = now or time.monotonic()

    def _run_jobs(self, jobs: list[Job]) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        for call, _, _ in jobs:
            try:
                outcomes.append((True, call()))
            except Exception as exc:  # the call's own error: its savepoint is undone
                outcomes.append((False, exc))
        return outcomes

    def _sync_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._syncer is not None:
            self._ask_syncer(loop, self._syncer)
        elif not self._syncing and self._written:
            self._syncing = True
            self._committer.run(loop, partial(self._sync, loop), self._synced)

    def _sync(self, loop: asyncio.AbstractEventLoop) -> tuple[int, Exception | None]:
        """In the committer thread: make every group committed so far durable; the number of
        the last one it covers. If groups committed while it synced (and the committer has
        nothing else queued), it hands what it covered to the loop (:meth:`_covered`) and
        syncs again at once, up to ``MAX_SYNCS`` times: a group that commits during a sync
        (the holder's, behind a contender's) waits for one sync more, not also for a turn of
        the loop and a hand-off to this thread."""
        upto = 0
        for _ in range(MAX_SYNCS):
            if upto:
                loop.call_soon_threadsafe(self._covered, upto, None)
            upto = self._seq  # committed (COMMIT returned) before the sync begins
            try:
                self._groups.sync()
            except Exception as exc:  # every call it covers fails (a bug too: none is left waiting)
                return upto, exc
            if self._seq == upto or self._committer.pending():
                break
        return upto, None

    def _synced(self, done: tuple[int, Exception | None]) -> None:
        """On the loop: the sync ended; sync again for the groups committed since (before
        answering: the committer syncs while the loop writes the replies), answer what it
        covered."""
        self._syncing = False
        loop = asyncio.get_running_loop()
        if self._seq > done[0]:
            self._sync_soon(loop)
        self._covered(*done)
        self._sync_soon(loop)

    def _ask_syncer(self, loop: asyncio.AbstractEventLoop, syncer: Syncer) -> None:
        """Ask the syncer process to cover every group committed so far (once per group: a
        group that commits while it syncs is asked for at once, and covered by its next
        sync)."""
        if not self._written or self._requested >= self._seq:
            return
        if not syncer.attached:
            syncer.attach(loop, self._synced_by_process, self._syncer_lost)
        self._requested = self._seq
        self._syncing = True
        syncer.request(self._seq)

    def _synced_by_process(self, upto: int, ok: bool) -> None:
        """On the loop: the syncer process covered every group up to ``upto``."""
        # a failure ends a server here, before answering anything the sync covered
        failed = None if ok else self._groups.failed("by the syncer process")
        if upto >= self._requested:
            self._syncing = False
        self._covered(upto, failed)

    def _syncer_lost(self) -> None:
        """On the loop: the syncer process went away; the committer thread syncs from now on
        (what was asked of the process and not answered included)."""
        self._syncer, self._syncing = None, False
        if not self._closed:
            log.warning("the WAL syncer process exited: syncing in a thread")
        self._sync_soon(asyncio.get_running_loop())

    def _covered(self, upto: int, failed: Exception | None) -> None:
        """On the loop: answer every group up to ``upto`` (the sync that covered it failed if
        ``failed``)."""
        while self._written and self._written[0][0] <= upto:
            _, jobs, outcomes, events = self._written.popleft()
            self._unsynced -= len(jobs)
            if failed is None:
                self._service.committed(events)
            self._answer(jobs, outcomes, failed)
        self._next(asyncio.get_running_loop())

    def _run_group(self, jobs: list[Job]) -> tuple[list[tuple[bool, Any]], Exception | None]:
        """In the committer thread, when the loop could not open the group itself: the group
        commits and syncs there (after any sync queued before it)."""
        try:
            with self._service.group():
                outcomes = self._run_jobs(jobs)
        except Exception as exc:
            return [], exc
        return outcomes, None

    def _group_done(
        self, jobs: list[Job], outcomes: list[tuple[bool, Any]], failed: Exception | None
    ) -> None:
        self._busy = False
        if failed is None:
            self._contend(jobs, outcomes)
        self._answer(jobs, outcomes, failed)
        self._next(asyncio.get_running_loop())

    def _answer(
        self, jobs: list[Job], outcomes: list[tuple[bool, Any]], failed: Exception | None
    ) -> None:
        """On the loop, once the group is durable (or failed): answer every call."""
        if failed is not None:
            outcomes = [(False, failed)] * len(jobs)
        answer_all(jobs, outcomes)

    def _next(self, loop: asyncio.AbstractEventLoop) -> None:
        """After a group: another for the calls that queued meanwhile, or idle."""
        if self._jobs:
            if not self._busy and not self._flushing:
                self._flushing = True
                loop.call_soon(self._flush)
        elif not self._busy and not self._syncing and not self._written:
            self._idle.set()
