"""The thread that commits and syncs for :class:`tenure.server.runtime.loop_executor.GroupExecutor`.

One thread, one job at a time, in the order given: what ``loop.run_in_executor`` on a
one-thread pool did, without a ``concurrent.futures.Future`` (and its ``Condition``), an asyncio
future wrapping it and their callbacks for every sync: a :class:`queue.SimpleQueue` in, and
``loop.call_soon_threadsafe`` out. That hand-off is paid once per group commit.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

log = logging.getLogger("tenure.server")
Work = tuple[Callable[[], Any], Callable[[Any], None], asyncio.AbstractEventLoop]


class Committer:
    """Runs ``work()`` in its thread and hands the result to ``then`` on ``loop``."""

    def __init__(self, name: str = "tenure-commit") -> None:
        self._queue: SimpleQueue[Work | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def run(
        self, loop: asyncio.AbstractEventLoop, work: Callable[[], Any], then: Callable[[Any], None]
    ) -> None:
        """Queue ``work`` (which must not raise: it returns its failure); ``then(result)`` is
        called on ``loop`` once it returned."""
        self._queue.put((work, then, loop))

    def pending(self) -> bool:
        """Work is queued (from the committer thread: whether it may go on with its own)."""
        return not self._queue.empty()

    def close(self) -> None:
        """Run what is queued, then stop the thread (from any thread but its own)."""
        self._queue.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            work, then, loop = item
            try:
                result = work()
            except BaseException:  # a bug: whoever waits for it would wait forever
                log.exception("the committer's work failed")
                raise
            try:
                loop.call_soon_threadsafe(then, result)
            except RuntimeError:  # the loop is closed: nobody is left to answer
                log.warning("the event loop closed before a commit was answered")
