"""Admit a freshly granted token in the caller's own fences, before the block runs.

``client.lease(key, fences=[...])`` (and ``client.acquire(key, fences=[...])``) calls
``fence.admit(key, token)`` on each fence as soon as the lease is granted. A stale holder's
write that reaches one of those fences afterwards is refused even if the new holder has not
written there yet. If an admission fails, the lease is released and the error raised.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable
from typing import Any, Protocol

from tenure.errors import InvalidRequest


class Admits(Protocol):
    """A fence that can admit a token on its own: ``admit(key, token)``."""

    def admit(self, key: str, token: int) -> Any: ...


def check_fences(fences: Iterable[Admits] | None) -> tuple[Admits, ...]:
    """The fences as a tuple, each with an ``admit(key, token)`` method (checked up front)."""
    if fences is None:
        return ()
    if isinstance(fences, str) or not isinstance(fences, Iterable):
        raise InvalidRequest("fences: expected a list of fences", field="fences")
    out = tuple(fences)
    for fence in out:
        if type(fence).__name__ == "TableFence":
            raise InvalidRequest(
                "fences: a TableFence admits inside your transaction and needs a connection. "
                "Pass ConnectedFence(connect, table) instead.",
                field="fences",
            )
        if not callable(getattr(fence, "admit", None)):
            raise InvalidRequest(
                f"fences: {type(fence).__name__} has no admit(key, token) method. "
                "Pass fences such as ConnectedFence, RedisFence or CheckedFence.",
                field="fences",
            )
    return out


def admit_all(fences: tuple[Admits, ...], key: str, token: int) -> None:
    """Admit ``token`` for ``key`` in every fence, in order (the first refusal raises)."""
    for fence in fences:
        fence.admit(key, token)


async def admit_all_async(fences: tuple[Admits, ...], key: str, token: int) -> None:
    """:func:`admit_all` from a coroutine: blocking fences run in a worker thread, an
    ``async def admit`` is awaited."""
    for fence in fences:
        if inspect.iscoroutinefunction(fence.admit):
            await fence.admit(key, token)
        elif getattr(fence, "blocking", True):
            await asyncio.to_thread(fence.admit, key, token)
        else:
            fence.admit(key, token)
