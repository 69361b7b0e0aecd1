"""What one call of the client is, whichever way it travels: :class:`Call` (the request),
:class:`Reply` (what came back), :class:`Safety` (whether it may be repeated) and the two
failures on the way, :class:`TransportError` and :class:`UnexpectedReply`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from tenure.errors import TenureError

# a request and its safety are the verb table's (a verb builds its own: ``Verb.call``)
from tenure.verbs.call import Call as Call
from tenure.verbs.call import Safety as Safety


class TransportError(TenureError):
    """The request failed on the way: no connection, a timeout, a connection cut mid-reply.

    ``sent`` is ``False`` when the request provably never reached the server (the connection
    could not be opened) and ``True`` when it may have been acted on.
    """

    code, status, title = "transport_error", 503, "the server could not be reached"
    fields: ClassVar[tuple[str, ...]] = ("method", "path", "sent")
    method: str | None
    path: str | None
    sent: bool | None


class UnexpectedReply(TransportError):
    """The server (or something in front of it) answered with something that is not the API:
    an error without a problem document (a proxy's HTML 502, say), or a body of the wrong shape.
    """

    code, status, title = "unexpected_reply", 502, "unexpected reply"
    fields: ClassVar[tuple[str, ...]] = ("method", "path", "sent", "http_status", "body")
    http_status: int | None
    body: str | None


@dataclass(frozen=True)
class Reply:
    """What came back: the status, the decoded JSON (or ``None``), and the raw text for errors."""

    status: int
    data: Any = None
    text: str = ""
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def transport_error(
    call: Call[Any], exc: BaseException, *, sent: bool | None = None
) -> TransportError:
    """The :class:`TransportError` for an exception of httpx (or of a database driver)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return TransportError(
        f"{call.method} {call.path}: {text}",
        method=call.method,
        path=call.path,
        sent=was_sent(exc) if sent is None else sent,
    )


def was_sent(exc: BaseException) -> bool:
    """Whether the request may have reached the server before ``exc`` interrupted it."""
    not_sent = (
        httpx.ConnectError,
        httpx.ConnectTimeout,
        httpx.PoolTimeout,
        httpx.UnsupportedProtocol,
    )
    return not isinstance(exc, not_sent)
