"""The pure half of the client: what to send for each verb, and what a reply means.

Nothing here does I/O. :class:`~tenure.client.sync.Client` and
:class:`~tenure.client.aio.AsyncClient` build a :class:`Call` with the functions below, hand it
to their transport (HTTP, or the database in direct mode), and turn the :class:`Reply` into a
frozen model of :mod:`tenure.core.models` or an exception with :func:`interpret`. The retry
rules (:class:`RetryPolicy`) are decided here too, so both clients retry exactly alike.

Retry rules. Every call says how safe it is to repeat (:class:`Safety`):

- ``IDEMPOTENT`` calls are repeated after any transient failure, even one where the request may
  have reached the server (a timeout waiting for the reply, a connection dropped mid-request, a
  5xx): reads, ``renew`` and ``renew_all`` (a second renewal only renews again), ``extend`` (it
  never shortens), ``release`` *with* a token and an item's release *with* its epoch (they
  only end that lease; a repeat says ``released: false``), and ``fenced_write`` *with* an
  ``op_id`` (the server answers a repeat with the first result).
- ``UNSAFE`` calls are repeated only when the request provably never reached the server (the
  connection could not be opened) or the server refused it without acting (``429``, ``503``):
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

import enum
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast
from urllib.parse import quote

import httpx

from tenure.core import models as m
from tenure.core.models import Event, Lease, Principal
from tenure.errors import InvalidRequest, TenureError
from tenure.settings import Settings
from tenure.verbs import leases as lv
from tenure.verbs import ops as ov
from tenure.verbs import principals as pv
from tenure.verbs import wire as w
from tenure.verbs.lists import Page as Page
from tenure.verbs.principals import IssuedToken as IssuedToken
from tenure.verbs.table import BODY_METHODS, PATH_PARAM, Verb

T = TypeVar("T")

RETRY_ANYWAY = frozenset({429, 503})  # the server says it did nothing: retry any call
RETRY_IDEMPOTENT = frozenset({500, 502, 504})  # it may have acted: retry idempotent calls only
# unauthenticated: the token was revoked (a dispatched agent's ends with its claim): no renewal
# can succeed any more
LOSS_CODES = frozenset({"lease_lost", "not_holder", "stale_token", "not_found", "unauthenticated"})


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


class Safety(enum.Enum):
    """How safe it is to repeat a call whose outcome is unknown."""

    IDEMPOTENT = "idempotent"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, independent of how it travels.

    ``op`` names the verb (direct mode dispatches on it); ``path_args`` are the values encoded
    in ``path``; ``body`` and ``params`` use the REST field names, ``None`` values left out.
    """

    op: str
    method: str
    path: str
    parse: Callable[[Any], T]
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    path_args: dict[str, Any] = field(default_factory=dict)
    safety: Safety = Safety.IDEMPOTENT
    wait_s: float = 0.0  # how long the server may hold the request (long poll)

    def args(self) -> dict[str, Any]:
        """Every argument of the call by its REST name (for direct mode)."""
        return {**self.path_args, **(self.params or {}), **(self.body or {})}


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


# requests -----------------------------------------------------------------------------------
def _drop_none(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def segment(value: str, field: str = "key") -> str:
    """``value`` as one URL path segment: everything reserved encoded, ``/`` included."""
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{field}: must be a non-empty string", field=field)
    encoded = quote(value, safe="")
    if encoded in (".", ".."):  # dot segments would be resolved away by URL normalisation
        encoded = encoded.replace(".", "%2E")
    return encoded


def to_millis(until: int | datetime | None) -> int | None:
    """An instant as epoch milliseconds (a ``datetime`` must carry its time zone)."""
    if until is None or isinstance(until, int):
        return until
    if isinstance(until, datetime):
        if until.tzinfo is None:
            raise InvalidRequest("until: a datetime needs a time zone", field="until")
        return round(until.timestamp() * 1000)
    return until  # let the server name the wrong type


def verb_call(verb: Verb[Any, T], *, wait_s: float = 0.0, **args: Any) -> Call[T]:
    """The request of a verb of the table: its route's path (path parameters filled in from
    ``args``), the rest of ``args`` as the body (or the query of a GET), ``None`` values left
    out; the reply read with the verb's ``parse``; safe to repeat as the verb says."""
    values = _drop_none(**args)
    path_args = {name: values.pop(name) for name in PATH_PARAM.findall(verb.path)}
    path = PATH_PARAM.sub(lambda p: segment(path_args[p.group(1)], p.group(1)), verb.path)
    safety = Safety.IDEMPOTENT if verb.repeatable(values) else Safety.UNSAFE
    body, params = (values, None) if verb.method in BODY_METHODS else (None, values or None)
    return Call(verb.name, verb.method, path, verb.parse, body, params, path_args, safety, wait_s)


def acquire(
    key: str,
    ttl_ms: int | None = None,
    task: str | None = None,
    meta: dict[str, Any] | None = None,
    wait_ms: int | None = None,
    session: str | None = None,
) -> Call[Lease]:
    wait_s = wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0
    return verb_call(
        lv.ACQUIRE, wait_s=wait_s, key=key, ttl_ms=ttl_ms, task=task, meta=meta,
        wait_ms=wait_ms, session=session,
    )  # fmt: skip


def renew(key: str, token: int, ttl_ms: int | None = None) -> Call[Lease]:
    return verb_call(lv.RENEW, key=key, token=token, ttl_ms=ttl_ms)


def renew_all(
    keys: list[str] | tuple[str, ...] | None = None, session: str | None = None
) -> Call[m.RenewAllResult]:
    listed = None if keys is None else _listed(keys)
    call = verb_call(lv.RENEW_ALL, keys=listed, session=session)
    return cast(Call[m.RenewAllResult], call)  # the reply's JSON reads as one in any case


def extend(
    key: str, token: int, until: int | datetime | None = None, by_ms: int | None = None
) -> Call[m.ExtendResult]:
    return verb_call(lv.EXTEND, key=key, token=token, until=to_millis(until), by_ms=by_ms)


def release(
    key: str, token: int | None = None, session: str | None = None
) -> Call[m.ReleaseResult]:
    """With ``token``: that lease (of any session of yours); without: ``session``'s own."""
    return verb_call(lv.RELEASE, key=key, token=token, session=session if token is None else None)


def force_release(key: str, reason: str) -> Call[m.ForceReleaseResult]:
    return verb_call(lv.FORCE_RELEASE, key=key, reason=reason)


def get_lease(key: str) -> Call[Lease]:
    return verb_call(lv.GET_LEASE, key=key)


LIST_LIMIT = 1000  # what one list_leases() returns at most, over pages


def list_leases(
    prefix: str | None = None,
    holder: str | None = None,
    task: str | None = None,
    after: str | None = None,
    limit: int | None = None,
) -> Call[Page[Lease]]:
    """A page of live leases (``limit``: the server's default, 1,000, when not given)."""
    return verb_call(
        lv.LIST_LEASES, prefix=prefix, holder=holder, task=task, after=after, limit=limit
    )


def fenced_write(key: str, token: int, value: Any, op_id: str | None = None) -> Call[m.FencedWrite]:
    # ``value`` is sent even when it is None (JSON null is a value to store)
    call = verb_call(lv.FENCED_WRITE, key=key, token=token, op_id=op_id)
    return Call(
        call.op, call.method, call.path, call.parse, {**(call.body or {}), "value": value},
        safety=call.safety,
    )  # fmt: skip


def fenced_read(key: str) -> Call[m.FencedValue]:
    return verb_call(lv.FENCED_READ, key=key)


FOLLOW_WAIT_MS = 25_000  # each long-poll of a follower
FOLLOW_LIMIT = 1000


def events(
    after: int = 0,
    key: str | None = None,
    holder: str | None = None,
    type: str | None = None,
    limit: int = 100,
    item: str | None = None,
    wait_ms: int | None = None,
) -> Call[list[Event]]:
    wait_s = wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0
    call = verb_call(
        ov.EVENTS, wait_s=wait_s, after=after, key=key, item=item, holder=holder, type=type,
        limit=limit, wait_ms=wait_ms,
    )  # fmt: skip
    return reparse(call, events_reply)


def follow_page(
    after: int, key: str | None, holder: str | None, type: str | None, item: str | None
) -> Call[tuple[list[Event], int]]:
    """One long-poll of a follower of the event log: its events, and the cursor to go on from
    (the server's ``next``: past every event it examined, matched or not)."""
    call = events(after, key, holder, type, FOLLOW_LIMIT, item, FOLLOW_WAIT_MS)

    def parse(data: Any) -> tuple[list[Event], int]:
        page = ov.EVENTS.parse(data)
        return page.events, page.next or (page.events[-1].id if page.events else after)

    return reparse(call, parse)


def stats() -> Call[dict[str, Any]]:
    return verb_call(ov.STATS)


def timeline(span_ms: int = 3_600_000, bucket_ms: int = 60_000) -> Call[dict[str, Any]]:
    return verb_call(ov.TIMELINE, span_ms=span_ms, bucket_ms=bucket_ms)


def me() -> Call[Principal]:
    return verb_call(pv.WHOAMI)


def add_principal(
    name: str,
    kind: str = "agent",
    roles: tuple[str, ...] | list[str] = (),
    parent: str | None = None,
    ttl_ms: int | None = None,
) -> Call[IssuedToken]:
    return verb_call(
        pv.ADD_PRINCIPAL, name=name, kind=kind, roles=_listed(roles), parent=parent, ttl_ms=ttl_ms
    )


def revoke_token(name: str, token_id: str) -> Call[None]:
    return verb_call(pv.REVOKE_TOKEN, name=name, token_id=token_id)


def reparse(call: Call[Any], parse: Callable[[Any], T]) -> Call[T]:
    """``call`` with its reply read by ``parse`` instead."""
    return Call(
        call.op, call.method, call.path, parse, call.body, call.params, call.path_args,
        call.safety, call.wait_s,
    )  # fmt: skip


def _listed(values: Any) -> Any:
    """A list for JSON; a lone string stays a string so the server names the wrong type."""
    if isinstance(values, list | tuple | set | frozenset):
        return list(values)
    return values


def encode_body(body: Mapping[str, Any]) -> bytes:
    """``body`` as the JSON the server reads, or :class:`InvalidRequest` naming the bad field."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        bad = "body"
        for name, value in body.items():
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                bad = name
                break
        raise InvalidRequest(f"{bad}: must be JSON ({exc})", field=bad) from None


# replies ------------------------------------------------------------------------------------
# (each verb reads its own reply: ``Verb.parse``; these names serve the item calls and the CLI)
lease_from = Lease.from_wire
event_from = w.event_from_wire
principal_from = w.principal_from_wire
extend_reply = w.extend_result_from_wire


def lease_reply(data: Any) -> Lease:
    return Lease.from_wire(data["lease"])


def events_reply(data: Any) -> list[Event]:
    return ov.EVENTS.parse(data).events


def interpret(call: Call[T], reply: Reply) -> T:
    """The result of ``call`` from ``reply``, or the exception the reply stands for."""
    if reply.ok:
        try:
            return call.parse(reply.data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UnexpectedReply(
                f"{call.method} {call.path}: a {reply.status} reply of the wrong shape ({exc!r})",
                method=call.method,
                path=call.path,
                sent=True,
                http_status=reply.status,
                body=reply.text[:500],
            ) from None
    raise error_from(call, reply)


def error_from(call: Call[Any], reply: Reply) -> TenureError:
    """The exception a failed reply stands for: the problem's class, else UnexpectedReply."""
    data = reply.data
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        return TenureError.from_problem(data)
    return UnexpectedReply(
        f"{call.method} {call.path}: HTTP {reply.status} without a problem document",
        method=call.method,
        path=call.path,
        sent=True,
        http_status=reply.status,
        body=reply.text[:500],
    )


def is_loss(error: BaseException) -> bool:
    """Whether a renewal's error says the lease is gone (no retry can bring it back)."""
    return isinstance(error, TenureError) and error.code in LOSS_CODES


def loss_reason(error: TenureError) -> str:
    """Why a lease is gone, from the error of its renewal: the server's ``reason`` if any."""
    reason = getattr(error, "reason", None)
    return str(reason) if error.code == "lease_lost" and reason else error.code


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
        if reply.status in RETRY_ANYWAY:
            return True
        return reply.status in RETRY_IDEMPOTENT and call.safety is Safety.IDEMPOTENT
    if isinstance(error, UnexpectedReply) or not isinstance(error, TransportError):
        return False
    return error.sent is False or call.safety is Safety.IDEMPOTENT


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


# Idle connections are dropped before the server's keep-alive timeout (uvicorn: 5 s) can close
# them under a request being sent: that race would make an acquire fail ambiguously.
HTTP_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=2.0)


def http_timeout(timeout: float, call: Call[Any]) -> httpx.Timeout:
    """The httpx timeout of one try: ``timeout`` per phase, plus the long poll for the reply."""
    return httpx.Timeout(timeout, read=timeout + call.wait_s)


def http_headers(token: str | None) -> dict[str, str]:
    from tenure import __version__ as VERSION  # at call time: tenure imports this module

    headers = {"User-Agent": f"tenure-python/{VERSION}", "Accept": "application/json"}
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


def server_urls(url: str) -> list[str]:
    """The servers of ``url``: one ``http(s)://`` URL, or several separated by commas (servers
    sharing one PostgreSQL database; the client fails over between them)."""
    urls = [u.strip().rstrip("/") for u in url.split(",")]
    for one in urls:
        if not one.startswith(("http://", "https://")):
            raise ValueError(
                f"unsupported URL {one!r}: use http(s)://, sqlite:/// or postgresql://"
            )
    if len(set(urls)) != len(urls):
        raise ValueError(f"a server is listed twice in {url!r}")
    return urls


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
