"""How a call travels and is retried, the same for both clients: the retry rules
(:class:`RetryPolicy`), the HTTP plumbing over httpx, where to connect (:func:`target`, several
servers in a :class:`Rotation`) and the one-method transport seam (:class:`SyncTransport`,
:class:`AsyncTransport`). The calls themselves are built in :mod:`tenure.client._wire`.

Retry rules. Every call says how safe it is to repeat (:class:`Safety`):

- ``IDEMPOTENT`` calls are repeated after any transient failure, even one where the request may
  have reached the server (a timeout waiting for the reply, a connection dropped mid-request, a
  5xx): reads, ``renew`` and ``renew_all`` (a second renewal only renews again), ``extend`` (it
  never shortens), ``release`` *with* a token and an item's release *with* its epoch (they
  only end that lease; a repeat says ``released: false``), and ``fenced_write`` *with* an
  ``op_id`` (the server answers a repeat with the first result).
- ``UNSAFE`` calls are repeated only when the request provably never reached the server (the
  connection could not be opened) or the server refused it without acting (``429``, ``503``;
  not ``429 quota_exceeded``, which a retry within the budget would meet again, nor a ``503``
  with ``outcome: unknown``, whose call may have committed before the database went away):
  ``acquire``, ``release`` without a token, ``force_release``, ``fenced_write`` without an
  ``op_id``, ``add_principal`` and ``revoke_token``. ``acquire`` is in this group on purpose:
  re-acquiring your own live lease from the same session hands back the same lease and token,
  so one process repeating its own acquisition is harmless, but a session shared by several
  processes (one ``TENURE_SESSION`` handed to several, or the default session ``""``) would
  turn a repeated acquisition into a silent second grant of a lease another process just took.
  After an ambiguous failure the call raises :class:`TransportError` with ``sent=True``;
  calling ``acquire`` again yourself is safe when the session is yours alone (a client's own
  random session is).

Retries back off exponentially with jitter, honour ``Retry-After``, and stop at the policy's
attempt count or time budget, whichever comes first.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from tenure.client._call import Call, Reply, Safety, TransportError, UnexpectedReply
from tenure.client._wire import encode_body
from tenure.core.servers import server_urls as server_urls
from tenure.core.version import __version__
from tenure.settings import Settings

RETRY_ANYWAY = frozenset({429, 503})  # the server says it did nothing (unless a 503 says its
# outcome is unknown): retry any call
RETRY_IDEMPOTENT = frozenset({500, 502, 504})  # it may have acted: retry idempotent calls only


# retries ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before repeating a failed call.

    ``attempts`` counts every try (1 turns retries off); ``budget`` is the time in seconds after
    the first try past which no new try starts. Delays grow from ``backoff`` by doubling up to
    ``max_backoff`` with "equal jitter" (half fixed, half random); a ``Retry-After`` from the
    server is honoured within the budget.
    """

    attempts: int = 4
    budget: float = 10.0
    backoff: float = 0.1
    max_backoff: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.budget < 0 or self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("budget and backoff must not be negative")

    def delay(self, retry: int, rng: Callable[[], float] = random.random) -> float:
        """The pause before retry number ``retry`` (1 for the first retry)."""
        return jittered(self.backoff, self.max_backoff, retry, rng)

    def next_delay(
        self,
        call: Call[Any],
        attempt: int,
        elapsed: float,
        *,
        reply: Reply | None = None,
        error: BaseException | None = None,
        rng: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait before trying ``call`` again after ``attempt`` tries, or ``None``."""
        if attempt >= self.attempts or not retryable(call, reply=reply, error=error):
            return None
        pause = self.delay(attempt, rng)
        if reply is not None and reply.retry_after is not None:
            pause = max(pause, reply.retry_after)
        if elapsed + pause > self.budget:
            return None
        return pause


def jittered(base: float, cap: float, n: int, rng: Callable[[], float] = random.random) -> float:
    """Exponential backoff with equal jitter: in ``[d/2, d]``, ``d = min(cap, base*2**(n-1))``."""
    ceiling = min(cap, base * 2.0 ** max(0, n - 1))
    return ceiling / 2 + rng() * ceiling / 2


def retryable(
    call: Call[Any], *, reply: Reply | None = None, error: BaseException | None = None
) -> bool:
    """Whether a failure of ``call`` may be retried (see the module's rules)."""
    if reply is not None:
        if reply.status in RETRY_ANYWAY and not _in_doubt(reply):
            return not _over_quota(reply)
        if reply.status == 503:  # outcome unknown: it may have acted
            return call.safety is Safety.IDEMPOTENT
        return reply.status in RETRY_IDEMPOTENT and call.safety is Safety.IDEMPOTENT
    if isinstance(error, UnexpectedReply) or not isinstance(error, TransportError):
        return False
    return error.sent is False or call.safety is Safety.IDEMPOTENT


def _in_doubt(reply: Reply) -> bool:
    """A ``503`` with ``outcome: unknown``: the database went away while the call committed, so
    it may have happened; only a call that is safe to repeat is repeated."""
    return isinstance(reply.data, dict) and reply.data.get("outcome") == "unknown"


def _over_quota(reply: Reply) -> bool:
    """A ``429 quota_exceeded``: a retry within the budget would be refused again (room comes
    only when the caller's leases or agents end, or the minute does)."""
    return isinstance(reply.data, dict) and reply.data.get("code") == "quota_exceeded"


def retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (the date form is ignored)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def reply_from(
    status: int, content_type: str, content: bytes, retry_after_header: str | None
) -> Reply:
    """A :class:`Reply` from the raw parts of an HTTP response."""
    text = content.decode("utf-8", "replace")
    data: Any = None
    if content and "json" in content_type.lower():
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    return Reply(status, data, text, retry_after(retry_after_header))


# Idle connections are dropped before the server's keep-alive timeout (uvicorn: 5 s) can close
# them under a request being sent: that race would make an acquire fail ambiguously.
HTTP_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=2.0)


def http_timeout(timeout: float, call: Call[Any]) -> httpx.Timeout:
    """The httpx timeout of one try: ``timeout`` per phase, plus the long poll for the reply."""
    return httpx.Timeout(timeout, read=timeout + call.wait_s)


def http_headers(token: str | None) -> dict[str, str]:
    headers = {"User-Agent": f"tenure-python/{__version__}", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def http_request(
    client: httpx.Client | httpx.AsyncClient, call: Call[Any], timeout: float
) -> httpx.Request:
    """The httpx request of ``call`` (the body encoded here, so bad values name their field)."""
    content = None if call.body is None else encode_body(call.body)
    headers = {} if content is None else {"Content-Type": "application/json"}
    return client.build_request(
        call.method,
        call.path,
        params=call.params or None,
        content=content,
        headers=headers,
        timeout=http_timeout(timeout, call),
    )


def reply_from_httpx(response: httpx.Response) -> Reply:
    return reply_from(
        response.status_code,
        response.headers.get("content-type", ""),
        response.content,
        response.headers.get("retry-after"),
    )


# where to connect -----------------------------------------------------------------------------
DIRECT_SCHEMES = ("sqlite://", "postgresql://", "postgres://")


@dataclass(frozen=True)
class Target:
    """Where a client talks to: a server (``url``, ``token``) or a database (direct mode)."""

    url: str
    token: str | None = None
    principal: str | None = None

    @property
    def direct(self) -> bool:
        return self.url.startswith(DIRECT_SCHEMES)


def target(url: str | None, token: str | None, principal: str | None) -> Target:
    """Resolve the constructor's arguments, reading ``TENURE_URL``/``TENURE_TOKEN`` if needed.

    The environment's token is used only with the environment's URL (or no URL), so a token is
    never sent to a server it was not configured for.
    """
    given_token = token
    if url is None or token is None:
        settings = Settings.from_env()
        if url is None:
            url = settings.url
            token = token if token is not None else settings.token
        elif token is None and url.rstrip("/") == settings.url.rstrip("/"):
            token = settings.token
    if not isinstance(url, str) or not url:
        raise ValueError("url must be a server URL (http://…) or a database URL")
    if url.startswith(DIRECT_SCHEMES):
        if not principal:
            raise ValueError(
                "direct mode (a database URL) needs principal=: the name every call acts as"
            )
        if given_token:
            raise ValueError("direct mode takes principal=, not token=")
        return Target(url, None, principal)
    urls = server_urls(url)
    if principal is not None:
        raise ValueError("principal= is for direct mode; over HTTP the token says who you are")
    return Target(",".join(urls), token)


class Rotation:
    """Which of several servers to try: the last one that answered first, then the others in
    order. A try that fails before reaching a server moves on to the next one at once; any
    other failure makes the *next* try (the retry policy's) start at the next server."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.current = 0

    def order(self) -> list[int]:
        return [(self.current + i) % self.count for i in range(self.count)]

    def failed(self, index: int) -> None:
        if index == self.current:
            self.current = (index + 1) % self.count

    def answered(self, index: int) -> None:
        self.current = index


# the I/O seam ---------------------------------------------------------------------------------
class SyncTransport(Protocol):
    """Carries one try of a call; raises :class:`TransportError` (or the call's own error)."""

    def send(self, call: Call[Any], timeout: float) -> Reply: ...

    def close(self) -> None: ...


class AsyncTransport(Protocol):
    async def send(self, call: Call[Any], timeout: float) -> Reply: ...

    async def close(self) -> None: ...
