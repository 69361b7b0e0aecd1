"""A client's requests to an ASGI app in this process: httpx's ``ASGITransport`` run on the
app's event loop, for a client on another thread (or another loop).

Two fronts use it, so they answer exactly as a server does (the real routes, their validation,
the verb table and the problem replies, byte for byte): the server's own MCP tools on ``/mcp``
(:mod:`tenure.mcp.loopback`: the app's loop, from a tool's worker thread) and direct mode
(:mod:`tenure.client.direct`: an app of its own, on a loop in a thread of its own).

Nothing here is reachable from the network: a request carries extra ASGI scope keys
(:func:`scoped`) only because this process put them there; an HTTP request cannot set a scope
key, whatever headers it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

T = TypeVar("T")
#: the base URL of the in-process requests (they never leave the process)
BASE = "http://tenure.local"
#: the address of a request whose caller's address is unknown
NO_ADDRESS = ("127.0.0.1", 0)
#: how a request is run on the app's loop from the caller's thread: ``run(fn, request)``
#: (``anyio.from_thread.run`` from a worker thread of that loop, a portal's ``call`` otherwise)
Runner = Callable[
    [Callable[[httpx.Request], Coroutine[Any, Any, httpx.Response]], httpx.Request], Any
]


def scoped(app: ASGIApp, extra: Mapping[str, Any]) -> ASGIApp:
    """``app`` with the keys of ``extra`` added to each request's scope."""
    if not extra:
        return app

    async def with_extra(scope: Scope, receive: Receive, send: Send) -> None:
        await app({**scope, **extra}, receive, send)

    return with_extra


class AppTransport(httpx.BaseTransport):
    """A blocking httpx transport to ``app``: each request runs on the app's loop (``run``)
    and comes back read in full (so the response belongs to no loop)."""

    def __init__(self, app: ASGIApp, run: Runner, address: tuple[str, int] | None = None) -> None:
        self._asgi = httpx.ASGITransport(app=app, client=address or NO_ADDRESS)
        self._run = run

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response: httpx.Response = self._run(self.send, request)
        return response

    async def send(self, request: httpx.Request) -> httpx.Response:
        """On the app's loop: the request, its response read in full."""
        response = await self._asgi.handle_async_request(request)
        content = await response.aread()
        return httpx.Response(response.status_code, headers=response.headers, content=content)


class LoopAppTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of :class:`AppTransport` for a client on another event loop: each
    request runs on the app's loop (``start``: a portal's ``start_task_soon``) while the
    caller's loop awaits it. Cancelled meanwhile, the request still ends before the
    cancellation goes on: what it did (a grant, say) is done by the time the client looks, so a
    lease granted to a cancelled acquisition can be found and released."""

    def __init__(self, sync: AppTransport, start: Callable[..., Any]) -> None:
        self._sync = sync
        self._start = start

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()  # the body, bytes on no loop
        copy = httpx.Request(request.method, request.url, headers=request.headers, content=content)
        attempt = asyncio.wrap_future(self._start(self._sync.send, copy))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await attempt
            raise


__all__ = ["BASE", "NO_ADDRESS", "AppTransport", "LoopAppTransport", "scoped"]
