"""The client of ``/mcp``'s tools: a :class:`tenure.Client` whose requests go to the server's own
app in this process, as requests of the tool's caller.

A tool call on ``/mcp`` acts through the same client as ``tenure mcp`` over stdio; only the
transport differs. Here it hands each request to the app (httpx's ``ASGITransport``) on the
server's event loop, from the worker thread the tool runs in: the request goes through the real
routes, their authentication (the caller's bearer token, forwarded, checked by the server's own
token check with the caller's address), the verb table and the problem replies, so ``/mcp``
and stdio answer alike by construction.

The connection's session (``mcp-http:<nonce>``) is one no client may name
(:data:`tenure.core.validate.RESERVED_SESSION_PREFIX`); the transport marks its own requests
with it (:data:`tenure.verbs.fields.CONNECTION_SESSION`, a context variable of the request,
which nothing from the network can set), so that exactly that session is accepted in them.
"""

from __future__ import annotations

import anyio.from_thread
import httpx
from starlette.types import ASGIApp

from tenure.client import Client
from tenure.client._inprocess import AppTransport
from tenure.client.sync import HttpTransport
from tenure.verbs.fields import CONNECTION_SESSION

#: the base URL of the in-process requests (they never leave the process)
BASE = "http://tenure.mcp"


class SessionTransport(AppTransport):
    """The shared in-process transport (:mod:`tenure.client._inprocess`) to ``app``, for a
    blocking client in a worker thread of the app's event loop: each request runs on that loop,
    in the caller's ``session``."""

    def __init__(self, app: ASGIApp, session: str, address: tuple[str, int] | None) -> None:
        super().__init__(app, anyio.from_thread.run, address)
        self._session = session

    async def send(self, request: httpx.Request) -> httpx.Response:
        mark = CONNECTION_SESSION.set(self._session or None)
        try:
            return await super().send(request)
        finally:
            CONNECTION_SESSION.reset(mark)


def app_client(
    app: ASGIApp, token: str | None, session: str, address: tuple[str, int] | None = None
) -> Client:
    """A client of ``app`` in this process, with the bearer ``token``, in ``session`` (a
    ``/mcp`` connection's, or ``""``: the principal's default), for a request from
    ``address``. Its calls block: make them from a worker thread of the app's event loop."""
    http = HttpTransport(BASE, token, SessionTransport(app, session, address))
    client = Client(BASE, token=token, session="", transport=http)
    client.session = session  # a connection's: no client may name it, this transport may
    return client


__all__ = ["SessionTransport", "app_client"]
