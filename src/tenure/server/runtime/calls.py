"""What both executors of the server share: the :class:`Executor` protocol, a call's answer,
and running and answering calls (:mod:`tenure.server.runtime.executor` picks the executor)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
log = logging.getLogger("tenure.server")
#: what a call's outcome is handed to, on the loop: ``(True, result)`` or ``(False, error)``
Answer = Callable[[bool, Any], None]
#: a call, its answer, and the key it acquires (``None``: it is no acquisition)
Job = tuple[Callable[[], Any], Answer, str | None]
Queued = tuple[Job, str | None, asyncio.AbstractEventLoop]  # a job, its key, its caller's loop


class Executor(Protocol):
    def submit(self, call: Callable[[], T], key: str | None = None) -> asyncio.Future[T]:
        """On the event loop: run ``call`` (in its turn); the future has its outcome. ``key``:
        the key it writes, if known (a group may lock it ahead)."""
        ...

    async def run(self, call: Callable[[], T], key: str | None = None) -> T: ...

    def call(
        self, call: Callable[[], Any], key: str | None, answer: Answer, acquire: bool = False
    ) -> None:
        """As :meth:`submit`, but ``answer(ok, value)`` is called with the outcome (on the
        loop, as soon as it is known) instead of a future being set: no future, no callback
        scheduled for a later turn of the loop (the hot protocol's path). ``acquire``: the call
        acquires ``key`` (it may wait behind the holder's calls while the key is contended)."""
        ...

    def close(self) -> None: ...


class Calls:
    """:meth:`Executor.submit` and :meth:`Executor.run` over an executor's ``call``."""

    def call(
        self, call: Callable[[], Any], key: str | None, answer: Answer, acquire: bool = False
    ) -> None:
        raise NotImplementedError

    def submit(self, call: Callable[[], T], key: str | None = None) -> asyncio.Future[T]:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.call(call, key, partial(resolve, future))
        return future

    async def run(self, call: Callable[[], T], key: str | None = None) -> T:
        return await self.submit(call, key)


def resolve(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """The answer of :meth:`Executor.submit`'s future."""
    if future.done():  # the request was cancelled (its client went away)
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def answer_all(jobs: list[Job], outcomes: list[tuple[bool, Any]]) -> None:
    for (_, answer, _), (ok, value) in zip(jobs, outcomes, strict=True):
        try:
            answer(ok, value)
        except Exception:  # a bug in one answer must not leave the others unanswered
            log.exception("answering a call failed")


def outcome(call: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, call()
    except Exception as exc:  # the call's own error
        return False, exc
