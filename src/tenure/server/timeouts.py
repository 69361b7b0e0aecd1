"""Header and body read timeouts, and the client's address, on uvicorn's httptools protocol.

uvicorn closes a connection that stays idle between requests (``timeout_keep_alive``), but not
one that sent part of a request and then nothing: a client that opens connections and sends
half a request line, or headers announcing a body it never sends, holds a socket, a parser and
(once the headers are in) an ASGI task for as long as it likes. :class:`TimedProtocol` times
each request:

- its line and headers must be in within ``header_timeout_ms`` of the connection being opened
  or of the request's first byte, else the connection is closed (no answer: the request was
  never read);
- its body within ``body_timeout_ms`` of its headers, else ``408 request_timeout`` and the
  connection is closed.

A request whose body is in is not timed any further (a long-poll waits as long as it asked).

:func:`source` is the address failed authentications are counted by, as the ASGI path sees it
after uvicorn's proxy-headers middleware: the peer, or the client the ``X-Forwarded-For`` of a
configured proxy names.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from uvicorn.middleware.proxy_headers import _TrustedHosts
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from tenure.core import hook_failures
from tenure.errors import RequestTimeout
from tenure.server.http.deps import dumps
from tenure.server.http.hook_guard import HOOK_PATH
from tenure.server.http.problems import PROBLEM

if TYPE_CHECKING:
    from starlette.types import Scope

    from tenure.server.http.app import TenureApp


def timed_protocol(app: TenureApp) -> type[TimedProtocol]:
    """The protocol class for uvicorn's ``http=`` setting, with ``app``'s read timeouts."""
    return type("TenureTimedProtocol", (TimedProtocol,), {"tenure_app": app})


def source(scope: Scope, trusted: _TrustedHosts | None) -> str | None:
    """The request's client address: the peer's, or (when the peer is one of the ``trusted``
    proxies) the client its ``X-Forwarded-For`` names, as uvicorn's middleware reads it."""
    client = scope.get("client")
    host: str | None = client[0] if client else None
    if trusted is None or host not in trusted:
        return host
    forwarded = [value for name, value in scope["headers"] if name == b"x-forwarded-for"]
    if not forwarded:
        return host
    named, _ = trusted.get_trusted_client_address(b", ".join(forwarded).decode("latin-1"))
    return named or host


class TimedProtocol(HttpToolsProtocol):
    tenure_app: TenureApp
    _headers_due: asyncio.TimerHandle | None = None
    _body_due: asyncio.TimerHandle | None = None
    _trusted: _TrustedHosts | None = None
    _trusted_read = False

    @property
    def trusted(self) -> _TrustedHosts | None:
        """The proxies whose ``X-Forwarded-For`` is believed (``None``: none); read once for
        the class (one per server: :func:`timed_protocol`), not once per connection."""
        cls = type(self)
        if not cls._trusted_read:
            proxies = self.config.forwarded_allow_ips if self.config.proxy_headers else None
            cls._trusted = _TrustedHosts(proxies) if proxies else None
            cls._trusted_read = True
        return cls._trusted

    def _seconds(self, which: str) -> float:
        return float(getattr(self.tenure_app.http_settings, which)) / 1000

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._time_headers()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._time_headers()

    def on_headers_complete(self) -> None:
        self._cancel()
        super().on_headers_complete()
        if not self.transport.is_closing():
            late = self._seconds("body_timeout_ms")
            self._body_due = self.loop.call_later(late, self._body_late)

    def on_message_complete(self) -> None:
        self._cancel()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _time_headers(self) -> None:
        if self._headers_due is None:
            late = self._seconds("header_timeout_ms")
            self._headers_due = self.loop.call_later(late, self.transport.close)

    def _cancel(self) -> None:
        for due in (self._headers_due, self._body_due):
            if due is not None:
                due.cancel()
        self._headers_due = self._body_due = None

    def _body_late(self) -> None:
        """The body did not come in time: ``408`` (unless an answer was begun) and close."""
        self._body_due = None
        cycle: Any = self.cycle
        if cycle is not None and not cycle.response_started and not self.transport.is_closing():
            cycle.disconnected = True  # the app's task (if any) reads a disconnect, sends nothing
            cycle.message_event.set()
            err = RequestTimeout(
                f"the request's body did not arrive within {self._seconds('body_timeout_ms'):g}"
                " s of its headers; send the whole body at once"
            )
            content, status, kind = dumps(err.to_problem()), 408, PROBLEM.encode()
            if cycle.scope.get("path") == HOOK_PATH:  # a hook: the harness's deny (fail closed)
                seconds = self._seconds("body_timeout_ms")
                content, status = dumps(hook_failures.body_late(seconds)), 200
                kind = b"application/json"
            head = [STATUS_LINE[status]]
            for name, value in self.server_state.default_headers:
                head += [name, b": ", value, b"\r\n"]
            head += [b"content-type: ", kind, b"\r\n"]
            head += [b"content-length: ", str(len(content)).encode(), b"\r\n"]
            self.transport.write(b"".join([*head, b"connection: close\r\n\r\n", content]))
        self.transport.close()
