"""The event bell: wakes long-polls of ``/v1/events`` and SSE followers when events commit.

:meth:`Bell.ring` is called by the service after every commit that appended events (from any
thread); waiters on the event loop wake and read the log again. Rings from other servers
sharing the database are not heard here (yet): followers also re-read every
``RECHECK_S`` seconds, so they see other servers' events within that time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterable, Callable, Mapping

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from tenure.server.runtime.departure import Departure
from tenure.service.leases import Service
from tenure.verbs.ops import EventPage, Filters, read_page

RECHECK_S = 1.0


async def read_page_async(
    service: Service, after: int, filters: Filters, limit: int, scan: int
) -> EventPage:
    """:func:`tenure.verbs.ops.read_page` in a worker thread."""
    return await anyio.to_thread.run_sync(lambda: read_page(service, after, filters, limit, scan))


class Bell:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: set[asyncio.Event] = set()
        self.rung = 0
        self.closing = False

    def ring(self) -> None:
        """Something was appended: wake every waiter. Safe from any thread."""
        self.rung += 1
        self._on_loop()

    def close(self) -> None:
        """Shutting down: waiters return at once and stop waiting."""
        self.closing = True
        self._on_loop()

    def _on_loop(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._wake_all)

    def _wake_all(self) -> None:
        for waiter in self._waiters:
            waiter.set()

    async def wait(self, seen: int, seconds: float, departure: Departure | None = None) -> None:
        """Sleep until a ring after ``seen`` (a value of :attr:`rung`), or ``seconds`` pass, or
        the client of ``departure`` leaves."""
        self._loop = asyncio.get_running_loop()
        if self.rung != seen or self.closing or seconds <= 0:
            return
        me = asyncio.Event()
        self._waiters.add(me)
        try:
            with departure.waking(me) if departure else contextlib.nullcontext():
                if self.rung == seen:  # a ring between the check and joining
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(me.wait(), seconds)
        finally:
            self._waiters.discard(me)


def remaining(deadline: float) -> float:
    return deadline - time.monotonic()


class HeldStream(StreamingResponse):
    """A stream that calls ``release`` once it ends, however it ends (the client left, the
    server stops, an error)."""

    def __init__(
        self,
        content: AsyncIterable[str],
        release: Callable[[], None],
        media_type: str,
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
