"""Long-poll acquisition: waiters of one key are served in arrival order.

Only the head of a key's queue tries to acquire. It sleeps until the key is released (a
notification from the release route) or until the holder's deadline, whichever comes first, and
never polls the database on a short timer. When the head leaves (with the lease, or because its
wait ended) the next waiter becomes the head and tries at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable

from tenure.core.models import Lease
from tenure.errors import LeaseHeld

Attempt = Callable[[], Awaitable[Lease]]
SLACK_S = 0.005  # past the holder's deadline, so the store's clock agrees it lapsed
MIN_SLEEP_S = 0.01


class Waiters:
    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._queues: dict[str, deque[asyncio.Event]] = {}
        self._closing = False

    def waiting(self, key: str) -> int:
        return len(self._queues.get(key, ()))

    def notify(self, key: str) -> None:
        """The key may be free: wake the head of its queue."""
        queue = self._queues.get(key)
        if queue:
            queue[0].set()

    def close(self) -> None:
        """Shutting down: every waiter makes a last attempt and returns."""
        self._closing = True
        for queue in self._queues.values():
            for event in queue:
                event.set()

    async def acquire(self, key: str, attempt: Attempt, wait_ms: int) -> Lease:
        deadline = time.monotonic() + wait_ms / 1000
        queue = self._queues.setdefault(key, deque())
        if not queue:
            try:
                return await attempt()
            except LeaseHeld as held:
                if wait_ms <= 0 or self._closing:
                    raise
                last: LeaseHeld | None = held
        else:
            last = None
        me = asyncio.Event()
        queue.append(me)
        try:
            return await self._wait_in_line(queue, me, attempt, deadline, last)
        finally:
            queue.remove(me)
            if queue:
                queue[0].set()
            elif self._queues.get(key) is queue:
                del self._queues[key]

    async def _wait_in_line(
        self,
        queue: deque[asyncio.Event],
        me: asyncio.Event,
        attempt: Attempt,
        deadline: float,
        last: LeaseHeld | None,
    ) -> Lease:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self._closing:
                return await attempt()  # a last try: the lease, or a fresh lease_held
            if queue[0] is not me or last is None:
                if queue[0] is not me:
                    await _sleep_on(me, left)
                    continue
                try:
                    return await attempt()
                except LeaseHeld as held:
                    last = held
                    continue
            until_expiry = ((last.expires_at or 0) - self._now_ms()) / 1000 + SLACK_S
            await _sleep_on(me, max(MIN_SLEEP_S, min(left, until_expiry)))
            last = None  # woken (release, expiry or our turn): try again


async def _sleep_on(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)
    event.clear()
