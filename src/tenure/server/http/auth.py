"""Who a request's bearer token is, before the request goes anywhere else.

Every route of the server (FastAPI's ``caller`` dependency, the hot path of acquire, renew and
release, the event stream's recheck) asks one :class:`Authenticator`, outside any write
transaction: a request joins the executor's group only once its principal is known, so a flood
of made-up tokens never costs a holder a database round trip inside a group.

- **Known tokens** are answered from memory while the store's ``auth_version`` (a counter every
  change of a principal or a token moves) stands still. The server reads that counter at most
  once per ``cache_ms`` (1 s): a revocation made elsewhere (another server, the reaper) takes
  effect within that time, one made through this server at once (:meth:`Authenticator.forget`).
  A known token past its ``expires_at`` is refused from memory.
- **Unknown tokens** (never issued, revoked, expired) are remembered for ``negative_ms``, at
  most :data:`MAX_UNKNOWN` of them: asking again costs no database read. At most
  :data:`LOOKUPS` lookups of tokens the server does not know run at once.
- **Failed authentications** are counted per source (the connection's peer address, or the
  client an ``X-Forwarded-For`` names when the peer is a configured proxy) in a token bucket
  (``failures_per_s``, ``failures_burst``). A source past it gets ``429 rate_limited`` with
  ``Retry-After``, a second late (:data:`TARPIT_S`), for the tokens that cannot be valid: a
  malformed one, one refused a moment ago, or one whose id names no unrevoked token (the ids
  are read from the database at most once per ``cache_ms``, and only while some source is past
  its budget). A valid token is never refused because of others' failures: one the server
  knows is answered from memory before any limit, one it does not know is looked up.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from tenure.core.models import Principal
from tenure.errors import RateLimited, TenureError, Unauthenticated
from tenure.service.principals import TOKEN_RE, Principals, expired
from tenure.settings import AuthSettings
from tenure.store.base import Credential
from tenure.verbs.fields import TRUSTED_PRINCIPAL

MAX_KNOWN = 10_000  # tokens whose principal is remembered (then the oldest are forgotten)
MAX_UNKNOWN = 10_000  # refused tokens remembered
MAX_ADDRESSES = 10_000  # client addresses whose failures are counted
LOOKUPS = 4  # lookups of tokens the server does not know, at once
#: a ``429 rate_limited`` is sent this long (s) after its request: a client flooding made-up
#: tokens over keep-alive connections then gets one answer a second per connection, not as
#: many as the server can write (whose CPU the holders need)
TARPIT_S = 1.0
MISSING = "a valid bearer token is required"
#: what :meth:`Authenticator.quick` answers: the principal, the refusal, or ``None`` (ask the
#: database: :meth:`Authenticator.authenticate`)
Quick = Principal | TenureError | None


@dataclass(frozen=True)
class _Known:
    principal: Principal
    expires_at: int | None
    version: int  # the auth version it was good at


class Authenticator:
    """The server's one authentication, with its caches and its rate limit (module doc)."""

    def __init__(
        self,
        principals: Principals,
        settings: AuthSettings,
        now_ms: Callable[[], int],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._principals, self._store = principals, principals.store
        self._cache_s, self._negative_s = settings.cache_ms / 1000, settings.negative_ms / 1000
        self._rate, self._burst = float(settings.failures_per_s), float(settings.failures_burst)
        self._now_ms, self._clock = now_ms, monotonic
        self._lock = threading.Lock()
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._trusted_known: dict[str, _Known] = {}  # direct mode's principals, by name
        self._unknown: OrderedDict[str, tuple[float, str]] = OrderedDict()  # until, detail
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # level, at
        self._version, self._version_at = -1, -math.inf
        self._forgotten = 0  # calls of forget(): a read of the version begun before is stale
        self._lookups: anyio.CapacityLimiter | None = None
        self._ids: set[str] = set()  # of the unrevoked tokens, at _ids_version
        self._ids_version = -2
        self._ids_lock: anyio.Lock | None = None
        principals.on_revoke.append(self.forget)

    def forget(self) -> None:
        """A token was revoked through this server: read the auth version before trusting any
        known token again."""
        with self._lock:
            self._forgotten += 1
            self._version_at = -math.inf

    def quick(self, token: str | None, client: str | None) -> Quick:
        """From memory only (no I/O, on the event loop): the principal, or the refusal (it
        counts as a failure of ``client``), or ``None`` when the database must be asked."""
        if not token:
            return Unauthenticated(MISSING)
        now = self._clock()
        known = self._known.get(token)
        if known is not None:
            if known.expires_at is not None and known.expires_at <= self._now_ms():
                self._known.pop(token, None)
                return self._failed(token, client, expired(known.expires_at))
            fresh = now - self._version_at < self._cache_s and known.version == self._version
            return known.principal if fresh else None  # else: check it again, limited or not
        wait = self._limited(client, now)
        if wait is not None and not self._may_be_live(token, now):
            return _rate_limited(client, wait)
        if not TOKEN_RE.fullmatch(token):
            return self._failed(None, client, Unauthenticated(MISSING))
        refused = self._unknown.get(token)
        if refused is not None:
            if now < refused[0]:
                err = self._failed(None, client, Unauthenticated(refused[1]))
                return err if wait is None else _rate_limited(client, wait)
            self._unknown.pop(token, None)
        return None

    def _may_be_live(self, token: str, now: float) -> bool:
        """Whether ``token`` may be valid, from memory: its id names an unrevoked token, or the
        ids known are stale (the database is asked: :meth:`_look_up`)."""
        match = TOKEN_RE.fullmatch(token)
        if match is None:
            return False
        return not self._ids_fresh(now) or match[1] in self._ids

    def _ids_fresh(self, now: float) -> bool:
        return self._ids_version == self._version and now - self._version_at < self._cache_s

    async def authenticate(self, token: str | None, client: str | None) -> Principal:
        """The principal of ``token``, asking the database (in a worker thread) when memory
        does not know; :class:`Unauthenticated` or :class:`RateLimited` otherwise."""
        got = self.quick(token, client)
        if got is None and token is not None:
            got = await self._look_up(token, client)
        if isinstance(got, Principal):
            return got
        if isinstance(got, RateLimited):
            await anyio.sleep(TARPIT_S)
        raise got or Unauthenticated(MISSING)

    async def caller(self, scope: Mapping[str, Any], token: str | None) -> Principal:
        """Who a request is: the principal a direct-mode client of this process named (the
        scope key only it sets, :data:`TRUSTED_PRINCIPAL`: the stored principal of that name,
        else a plain one), or that of its bearer token (:meth:`authenticate`)."""
        name = scope.get(TRUSTED_PRINCIPAL)
        if isinstance(name, str):
            return await self._trusted(name)
        client = scope.get("client")
        return await self.authenticate(token, client[0] if client else None)

    async def _trusted(self, name: str) -> Principal:
        """The stored principal ``name``, else a plain one: remembered as a known token is (a
        change of its roles made elsewhere is seen within ``cache_ms``)."""
        if self._clock() - self._version_at >= self._cache_s:
            await anyio.to_thread.run_sync(self._read_version)
        known, version = self._trusted_known.get(name), self._version
        fresh = self._clock() - self._version_at < self._cache_s
        if known is not None and known.version == version and fresh:
            return known.principal
        found = await anyio.to_thread.run_sync(self._store.get_principal, name)
        principal = found or Principal(name)
        with self._lock:
            self._trusted_known[name] = _Known(principal, None, version)
            while len(self._trusted_known) > MAX_KNOWN:
                self._trusted_known.pop(next(iter(self._trusted_known)))
        return principal

    async def still_valid(self, token: str) -> bool:
        """Whether ``token`` still authenticates (an open stream asks every second)."""
        try:
            await self.authenticate(token, None)
        except TenureError:
            return False
        return True

    async def _look_up(self, token: str, client: str | None) -> Quick:
        if self._clock() - self._version_at >= self._cache_s:
            await anyio.to_thread.run_sync(self._read_version)
            got = self.quick(token, client)
            if got is not None:
                return got
        if self._limited(client, self._clock()) is not None and not self._ids_fresh(self._clock()):
            await self._load_ids()  # then a token that cannot be valid is refused from memory
            got = self.quick(token, client)
            if got is not None:
                return got
        version, known = self._version, token in self._known
        if self._lookups is None:
            self._lookups = anyio.CapacityLimiter(LOOKUPS)
        limiter = None if known else self._lookups  # a token it knew is checked at once
        try:
            found: Credential = await anyio.to_thread.run_sync(
                self._principals.credential, token, limiter=limiter
            )
        except Unauthenticated as err:
            self._known.pop(token, None)
            wait = self._limited(client, self._clock())  # (before this failure counts)
            refused = self._failed(token, client, err)
            return refused if wait is None else _rate_limited(client, wait)
        self._remember(token, _Known(found.principal, found.expires_at, version))
        return found.principal

    def _read_version(self) -> None:
        """In a worker thread: read the auth version; known tokens read at another one are
        checked again before their next use."""
        started, forgotten = self._clock(), self._forgotten
        version = self._store.auth_version()
        with self._lock:
            self._version = version
            if forgotten == self._forgotten:  # else: read it again at the next use
                self._version_at = started

    async def _load_ids(self) -> None:
        """Read the ids of the unrevoked tokens (once, however many requests wait for them)."""
        if self._ids_lock is None:
            self._ids_lock = anyio.Lock()
        async with self._ids_lock:
            if not self._ids_fresh(self._clock()):
                await anyio.to_thread.run_sync(self._read_ids)

    def _read_ids(self) -> None:
        """In a worker thread: the auth version, then the ids of the tokens live at it (or
        later: a token added meanwhile is among them, and the next version reads them again)."""
        started, forgotten = self._clock(), self._forgotten
        version = self._store.auth_version()
        ids = self._store.live_token_ids()
        with self._lock:
            self._ids, self._ids_version, self._version = ids, version, version
            if forgotten == self._forgotten:
                self._version_at = started

    def _remember(self, token: str, known: _Known) -> None:
        with self._lock:
            self._known[token] = known
            self._known.move_to_end(token)
            while len(self._known) > MAX_KNOWN:
                self._known.popitem(last=False)

    def _failed(self, token: str | None, client: str | None, err: Unauthenticated) -> TenureError:
        """Count a failure of ``client``; remember ``token`` as refused (``None``: it is)."""
        now = self._clock()
        with self._lock:
            if token is not None:
                self._unknown[token] = (now + self._negative_s, err.detail)
                while len(self._unknown) > MAX_UNKNOWN:
                    self._unknown.popitem(last=False)
            if client is not None:
                level = self._level(client, now) - 1.0
                self._buckets[client] = (level, now)
                self._buckets.move_to_end(client)
                while len(self._buckets) > MAX_ADDRESSES:
                    self._buckets.popitem(last=False)
        return err

    def _level(self, client: str, now: float) -> float:
        """What is left of ``client``'s budget of failures now (a full one if unknown)."""
        level, at = self._buckets.get(client, (self._burst, now))
        return min(self._burst, level + (now - at) * self._rate)

    def _limited(self, client: str | None, now: float) -> int | None:
        """Seconds ``client`` must wait for its next failure to be allowed; ``None``: none."""
        if client is None or client not in self._buckets:
            return None
        level = self._level(client, now)
        return None if level >= 1.0 else max(1, math.ceil((1.0 - level) / self._rate))


def _rate_limited(client: str | None, wait: int) -> RateLimited:
    return RateLimited(
        f"too many failed authentications from {client}. Retry in {wait} s with a valid token.",
        retry_after_s=wait,
    )
