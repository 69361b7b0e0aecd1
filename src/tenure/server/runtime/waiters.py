"""Long-poll acquisition: waiters of one key are served in arrival order.

Every request for a key joins the key's queue on arrival; only the head of the queue tries to
acquire. The head sleeps until the key is released (a notification from the release route) or
until the holder's deadline, whichever comes first, and never polls the database on a short
timer. When the head leaves (with the lease, or because its wait ended) the next waiter becomes
the head and tries at once. A head refused because of a lease on *another* key (a subtree above
its key, or a key under the subtree it asks for: the refusal's ``held_key``) also watches that
key while it sleeps, so the release of the blocking key wakes it too; a freed slot of a
semaphore (``KEY#slot/I``) wakes the head of ``KEY``'s queue. A request that does not
wait (``wait_ms`` 0) makes one attempt whatever the queue holds. A waiter whose client went
away (its :class:`~tenure.server.runtime.departure.Departure`) leaves the queue at once and
makes no more attempts (:class:`~tenure.server.runtime.departure.Withdrawn`); an attempt already
running is never interrupted (it may commit): the caller looks at the departure after it.

:meth:`Waiters.notify` and :meth:`Waiters.close` may be called from any thread (the release
route runs in a worker thread, ``close`` from a signal handler); they hand over to the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from tenure.core.semaphores import SLOT_MARK, semaphore_of
from tenure.errors import LeaseHeld, TooManyWaits
from tenure.server.runtime.departure import Departure, Withdrawn

T = TypeVar("T")
SLACK_S = 0.005  # past the holder's deadline, so the store's clock agrees it lapsed
MIN_SLEEP_S = 0.01


class Waiters:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._queues: dict[str, deque[asyncio.Event]] = {}
        #: key -> the heads (of other keys' queues) that a lease on it blocks
        self._watching: dict[str, set[asyncio.Event]] = {}
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def closing(self) -> bool:
        return self._closing

    def waiting(self, key: str) -> int:
        return len(self._queues.get(key, ()))

    def total(self) -> int:
        """Acquisitions waiting now, on every key."""
        return sum(len(queue) for queue in self._queues.values())

    def notify(self, key: str) -> None:
        """The key may be free: wake the head of its queue."""
        self._on_loop(lambda: self._wake_head(key))

    def close(self) -> None:
        """Shutting down: every waiter makes a last attempt and returns."""
        self._closing = True
        self._on_loop(self._wake_all)

    def _on_loop(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the event loop soon; safe from any thread and signal handlers."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # nobody ever waited
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback)

    def _wake_head(self, key: str) -> None:
        queue = self._queues.get(key)
        if queue:
            queue[0].set()
        for event in self._watching.get(key, ()):
            event.set()
        if SLOT_MARK in key and (semaphore := semaphore_of(key)) is not None:
            self._wake_head(semaphore[0])  # a freed slot frees its semaphore

    def _wake_all(self) -> None:
        for queue in self._queues.values():
            for event in queue:
                event.set()

    async def acquire(
        self,
        key: str,
        attempt: Callable[[], Awaitable[T]],
        wait_ms: int,
        departure: Departure | None = None,
    ) -> T:
        """``attempt()`` when it is this caller's turn, until it succeeds or ``wait_ms`` ends;
        :class:`Withdrawn` once ``departure`` says the client went away."""
        self._loop = asyncio.get_running_loop()
        if wait_ms <= 0:  # one attempt whatever the queue holds: no need to join it
            return await attempt()
        deadline = time.monotonic() + max(wait_ms, 0) / 1000
        queue = self._queues.setdefault(key, deque())
        me = asyncio.Event()
        queue.append(me)
        gone = departure or Departure()
        try:
            with gone.waking(me):
                return await self._turns(key, attempt, deadline, queue, me, gone)
        finally:
            queue.remove(me)
            if queue:
                queue[0].set()
            elif self._queues.get(key) is queue:
                del self._queues[key]

    async def _turns(
        self,
        key: str,
        attempt: Callable[[], Awaitable[T]],
        deadline: float,
        queue: deque[asyncio.Event],
        me: asyncio.Event,
        gone: Departure,
    ) -> T:
        while True:
            if gone.gone:
                raise Withdrawn(key)
            left = deadline - time.monotonic()
            if queue[0] is not me:
                if left <= 0 or self._closing:
                    return await attempt()  # not our turn, but no more time: one try
                await _sleep_on(me, left)
                continue
            try:
                return await attempt()
            except LeaseHeld as held:
                left = deadline - time.monotonic()
                if left <= 0 or self._closing:
                    raise
                until_expiry = ((held.expires_at or 0) - self._now_ms()) / 1000 + SLACK_S
                with self._watch(held.held_key, key, me):
                    await _sleep_on(me, max(MIN_SLEEP_S, min(left, until_expiry)))

    @contextlib.contextmanager
    def _watch(self, held_key: str | None, key: str, me: asyncio.Event) -> Iterator[None]:
        """While the block runs, a release of ``held_key`` (another key than ``key``) wakes
        ``me``."""
        if held_key is None or held_key == key:
            yield
            return
        watchers = self._watching.setdefault(held_key, set())
        watchers.add(me)
        try:
            yield
        finally:
            watchers.discard(me)
            if not watchers and self._watching.get(held_key) is watchers:
                del self._watching[held_key]


class Slots:
    """Open waits per principal (long-polls and event streams), at most ``limit`` each, so one
    caller cannot hold the server's connections and memory open at will. Used on the event
    loop only (no lock). A wait holds no worker thread while it sleeps: only its short reads
    and attempts run in the pool."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def open(self, who: str) -> int:
        return self._open.get(who, 0)

    def total(self) -> int:
        """Open waits now, of every principal."""
        return sum(self._open.values())

    @contextlib.contextmanager
    def hold(self, who: str) -> Iterator[None]:
        """One wait of ``who`` while the block runs; past the limit :class:`TooManyWaits`."""
        self.take(who)
        try:
            yield
        finally:
            self.give_back(who)

    def take(self, who: str) -> None:
        held = self._open.get(who, 0)
        if held >= self.limit:
            raise TooManyWaits(
                f"{who} has {held} long-polls or event streams open, the most one principal"
                f" may. Close one, or retry after {RETRY_AFTER_S} s.",
                limit=self.limit,
            )
        self._open[who] = held + 1

    def give_back(self, who: str) -> None:
        held = self._open.get(who, 0) - 1
        if held > 0:
            self._open[who] = held
        else:
            self._open.pop(who, None)


RETRY_AFTER_S = 1


async def _sleep_on(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)
    event.clear()
