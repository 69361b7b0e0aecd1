"""Whether the client of a long-poll is still there.

A long-poll (an acquisition with ``wait_ms``, ``GET /v1/events?wait_ms=``) has read its whole
request before it starts to wait, so the only message its ASGI ``receive`` can still bring is
``http.disconnect``: uvicorn hands that out as soon as the connection is lost (the client was
killed, timed out, pressed Ctrl-C). :func:`watching` reads ``receive`` in a task beside the wait
and marks the :class:`Departure` when it comes; whatever sleeps on an event it registered with
:meth:`Departure.waking` is woken at once, looks at :attr:`Departure.gone` and stops waiting.
A waiter that is gone is never granted: the acquisition is withdrawn from its key's queue, and a
grant that committed before the departure was seen is released by the route
(:func:`tenure.server.http.waiting.release_unreached`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

from starlette.types import Receive


class Departure:
    """Set once the client went away. Used on the event loop only."""

    def __init__(self) -> None:
        self.gone = False
        self._wake: set[asyncio.Event] = set()

    def leave(self) -> None:
        """The client went away: wake whatever waits on its behalf."""
        self.gone = True
        for event in self._wake:
            event.set()

    @contextlib.contextmanager
    def waking(self, event: asyncio.Event) -> Iterator[None]:
        """While the block runs, the client's departure sets ``event``."""
        if self.gone:
            event.set()
        self._wake.add(event)
        try:
            yield
        finally:
            self._wake.discard(event)


class Withdrawn(Exception):
    """The waiter's client went away while it waited: it was withdrawn, nothing was granted."""


@contextlib.asynccontextmanager
async def watching(receive: Receive) -> AsyncIterator[Departure]:
    """A :class:`Departure` marked when ``receive`` says ``http.disconnect``, while the block
    runs. The request's body must have been read already (a replayed body is skipped)."""
    departure = Departure()

    async def watch() -> None:
        with contextlib.suppress(Exception):  # a receive that fails tells nothing: stay
            while (await receive())["type"] != "http.disconnect":
                pass
            departure.leave()

    task = asyncio.get_running_loop().create_task(watch())
    try:
        yield departure
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
