# generated from aio.py by python scripts/gen_sync.py; do not edit
"""The blocking client: :class:`Client`, over HTTP or (direct mode) over the database."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar, cast

import httpx

from tenure.client import _transport as tr
from tenure.client import _wire as sh
from tenure.client._call import Call, Reply, TransportError, transport_error
from tenure.client._events import EventsMixin
from tenure.client._fences import Admits, admit_all, check_fences
from tenure.client._handles import FencedLeaseHandle, LeaseHandle
from tenure.client._items import Items
from tenure.client._session import client_session
from tenure.client._transport import RetryPolicy, SyncTransport
from tenure.client._wire import IssuedToken
from tenure.core.compaction import CompactionResult
from tenure.core.models import (
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    Lease,
    Principal,
    ReleaseAllResult,
    ReleaseResult,
    RenewAllResult,
)
from tenure.core.policy import PolicySet
from tenure.core.semaphores import slot_prefix
from tenure.core.signin import SigninCode
from tenure.core.token_floor import TokenFloor
from tenure.verbs import admin as av
from tenure.verbs import leases as lv
from tenure.verbs import ops as ov
from tenure.verbs import principals as pv
from tenure.verbs.principals import PrincipalInfo, RemovedPrincipal

T = TypeVar("T")
#: the most a clean-up after an interruption waits for each of its calls (seconds)
CLEANUP_S = 2.0


class HttpTransport:
    """One try of a call over HTTP with httpx (connection pooling, keep-alive).

    ``url`` may list several servers (comma-separated): a request that cannot reach one
    (connection refused) goes to the next at once; see :class:`~tenure.client._transport.Rotation`.
    """

    def __init__(self, url: str, token: str | None, http: httpx.BaseTransport | None = None):
        self._https = [
            httpx.Client(
                base_url=one,
                headers=tr.http_headers(token),
                transport=http,
                limits=tr.HTTP_LIMITS,
                trust_env=False,  # tenure reads the environment only through Settings
            )
            for one in tr.server_urls(url)
        ]
        self._rotation = tr.Rotation(len(self._https))

    def send(self, call: Call[Any], timeout: float) -> Reply:
        last: TransportError | None = None
        for index in self._rotation.order():
            http = self._https[index]
            try:
                response = http.send(tr.http_request(http, call, timeout))
            except httpx.TransportError as exc:
                self._rotation.failed(index)
                last = transport_error(call, exc)
                if last.sent:
                    raise last from exc
                continue
            self._rotation.answered(index)
            return tr.reply_from_httpx(response)
        assert last is not None
        raise last

    def close(self) -> None:
        for http in self._https:
            http.close()


class Client(EventsMixin):
    """The tenure API, blocking. Every method is one call (with retries, see below).

    ``Client()`` talks to ``TENURE_URL`` with ``TENURE_TOKEN``; ``Client(url, token=...)`` to a
    given server. ``Client("sqlite:///path/tenure.db", principal="cron")`` (or a
    ``postgresql://`` URL) runs the same API in this process against the database, with no
    server: see :mod:`tenure.client.direct` (it trusts the principal name it is given).

    ``session`` is the running holder this client object is under its principal (see
    :mod:`tenure.client._session`): by default ``TENURE_SESSION``, else a random one for each
    client object, so two clients sharing one token exclude each other like strangers. It is
    sent with every acquire, claim, dispatch and ``renew_all`` and with a release without a
    token; ``client.session`` says which it is.

    ``timeout`` (seconds) bounds each phase of each try (connect, send, read; a long poll's wait
    is added to the read). ``retry`` is the :class:`RetryPolicy`; which calls it may repeat is
    described in :mod:`tenure.client._transport`: reads, renewals, extends, releases with a token
    and fenced writes with an ``op_id`` after any transient failure; everything else, ``acquire``
    included, only when the request provably never reached the server. Failures on the way raise
    :class:`~tenure.client.TransportError`; the server's refusals raise the matching
    :class:`~tenure.TenureError` subclass with its fields.

    The client is thread-safe and a context manager; :meth:`lease` holds a lease with a
    background heartbeat. ``client.items`` (:class:`~tenure.client.items.Items`) is the work
    queue: items, claims, fenced progress and completion, and ``items.work(...)``, a claim held
    with a heartbeat.
    """

    items: Items

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        principal: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        policy: PolicySet | None = None,
        transport: SyncTransport | None = None,
        session: str | None = None,
    ) -> None:
        where = tr.target(url, token, principal)
        self.session = client_session(session)
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.url = where.url
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.direct = where.direct
        if transport is None:
            if where.direct:
                assert where.principal is not None
                # imported here: direct mode loads the server's app, the service, the store and
                # both database drivers, which a client over HTTP (every CLI start) does without
                from tenure.client.direct import DirectBackend, DirectTransport

                backend = DirectBackend(where.url, where.principal, policy=policy)
                transport = DirectTransport(backend)
            else:
                if policy is not None:
                    raise ValueError("policy= is for direct mode; the server has its own")
                transport = HttpTransport(where.url, where.token)
        self._transport = transport
        self.items = Items(self)

    # the call machinery ---------------------------------------------------------------------
    def _send_once(self, call: Call[Any], timeout: float | None = None) -> Reply:
        return self._transport.send(call, self.timeout if timeout is None else timeout)

    def _exchange(
        self, call: Call[Any], *, retry: RetryPolicy | None = None, timeout: float | None = None
    ) -> tuple[Reply, float]:
        """The final reply to ``call`` after retries, and when its try was sent (monotonic)."""
        policy = retry or self.retry
        start = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            sent = time.monotonic()
            try:
                reply = self._send_once(call, timeout)
            except TransportError as err:
                pause = policy.next_delay(call, attempt, time.monotonic() - start, error=err)
                if pause is None:
                    raise
            else:
                if reply.ok:
                    return reply, sent
                pause = policy.next_delay(call, attempt, time.monotonic() - start, reply=reply)
                if pause is None:
                    return reply, sent
            time.sleep(pause)

    def _timed(self, call: Call[T], **options: Any) -> tuple[T, float]:
        reply, sent = self._exchange(call, **options)
        return sh.interpret(call, reply), sent

    def _call(self, call: Call[T]) -> T:
        result, _ = self._timed(call)
        return result

    def _granted(self, call: Call[Lease], key: str) -> tuple[Lease, float]:
        """The lease of ``call`` (an acquisition of ``key``) and when it was sent.

        Interrupted while it waits (Ctrl-C, a cancelled task), its connection closes and the
        server withdraws it; a grant already on its way back is this session's lease nobody
        will use, so it is released before the interruption goes on (best effort)."""
        try:
            return self._timed(call)
        except BaseException as err:
            if call.wait_s and not isinstance(err, Exception):
                self._drop_unseen_grant(key, (call.body or {}).get("slots") is not None)
            raise

    def _drop_unseen_grant(self, key: str, semaphore: bool = False) -> None:
        """Release this session's lease on ``key`` (a ``semaphore``'s: its slot's) if it is a
        fresh grant (never renewed: not a lease the session held before it asked)."""
        once = RetryPolicy(attempts=1)
        with contextlib.suppress(Exception):
            if semaphore:  # the session's slot, if it has one (one at most)
                read_slots = lv.LIST_LEASES.call(prefix=slot_prefix(key))
                page, _ = self._timed(read_slots, retry=once, timeout=CLEANUP_S)
                found = [x for x in page.entries if x.session == self.session]
            else:
                read = lv.GET_LEASE.call(key=key)
                found = [(self._timed(read, retry=once, timeout=CLEANUP_S))[0]]
            for lease in found:
                if lease.state == "live" and lease.session == self.session and not lease.renewals:
                    release = sh.release(lease.key, lease.token, self.session)
                    self._timed(release, retry=once, timeout=CLEANUP_S)

    # leases -----------------------------------------------------------------------------------
    def acquire(
        self,
        key: str,
        ttl_ms: int | None = None,
        task: str | None = None,
        meta: dict[str, Any] | None = None,
        wait_ms: int | None = None,
        fences: Iterable[Admits] | None = None,
        scope: str | None = None,
        slots: int | None = None,
    ) -> Lease:
        """Acquire ``key`` for this client's session (or renew it if the session holds it);
        ``wait_ms`` waits while it is held (also by another session of your principal).
        ``fences`` admit the new token at once (see :meth:`lease`). ``scope="subtree"`` (on a
        key ending in ``/``) holds every key under it too; a refusal
        (:class:`~tenure.LeaseHeld`) names the blocking lease's key in ``held_key``.
        ``slots=N``: ``key`` is a semaphore of N slots; the lease is on a free slot's key
        (``lease.key``, ``KEY#slot/I``): renew, release and fence with that key."""
        admits = check_fences(fences)
        call = lv.ACQUIRE.call(
            key=key, ttl_ms=ttl_ms, task=task, meta=meta, wait_ms=wait_ms, session=self.session,
            scope=scope, slots=slots,
        )  # fmt: skip
        lease, _ = self._granted(call, key)
        try:
            admit_all(admits, lease.key, lease.token)
        except BaseException:
            with contextlib.suppress(Exception):  # the admission's error is the one to see
                self._call(sh.release(lease.key, lease.token, self.session))
            raise
        return lease

    def renew(self, key: str, token: int, ttl_ms: int | None = None) -> Lease:
        """Renew your lease ``token`` on ``key``; :class:`~tenure.LeaseLost` once it is gone."""
        return self._call(lv.RENEW.call(key=key, token=token, ttl_ms=ttl_ms))

    def renew_all(self, keys: list[str] | tuple[str, ...] | None = None) -> RenewAllResult:
        """Renew the live leases of this client's session (or those of them on ``keys``) in one
        call; the leases of your other sessions are left to lapse or be renewed by their own."""
        call = lv.RENEW_ALL.call(keys=keys, session=self.session)
        return self._call(cast(Call[RenewAllResult], call))  # the JSON reads as one

    def release_all(self) -> ReleaseAllResult:
        """End every live lease of this client's session (item claims excepted): what a
        process does on its way out. Idempotent: a repeat releases nothing more."""
        return self._call(lv.RELEASE_ALL.call(session=self.session))

    def extend(
        self, key: str, token: int, until: int | datetime | None = None, by_ms: int | None = None
    ) -> ExtendResult:
        """Push the deadline to ``until`` (epoch ms or an aware datetime) or now + ``by_ms``."""
        call = lv.EXTEND.call(key=key, token=token, until=until, by_ms=by_ms)
        return self._call(call)

    def release(self, key: str, token: int | None = None) -> ReleaseResult:
        """End your lease on ``key``: lease ``token`` if given (from any session of yours), else
        this client's session's own lease. Idempotent."""
        return self._call(sh.release(key, token, self.session))

    def transfer(self, key: str, token: int, to_session: str) -> Lease:
        """Hand your lease ``token`` on ``key`` to your session ``to_session``: the lease it
        holds now, under a new token (the old one is stale for fenced writes)."""
        return self._call(lv.TRANSFER.call(key=key, token=token, to_session=to_session))

    def force_release(self, key: str, reason: str) -> ForceReleaseResult:
        """End someone's live lease as an authority (admin, supervisor, or the holder's parent)."""
        return self._call(lv.FORCE_RELEASE.call(key=key, reason=reason))

    def get_lease(self, key: str) -> Lease:
        """The latest lease on ``key`` with its ``state``; :class:`~tenure.NotFound` if none."""
        return self._call(lv.GET_LEASE.call(key=key))

    def list_leases(
        self, prefix: str | None = None, holder: str | None = None, task: str | None = None
    ) -> list[Lease]:
        """Live leases, by key (up to 1,000; the pages the server cut short are fetched)."""
        found: list[Lease] = []
        after = None
        while True:
            size = sh.LIST_LIMIT - len(found) if found else None
            call = lv.LIST_LEASES.call(
                prefix=prefix, holder=holder, task=task, after=after, limit=size
            )
            page = self._call(call)
            found += page.entries
            if not page.more or len(found) >= sh.LIST_LIMIT:
                return found
            after = page.next

    def lease(
        self,
        key: str,
        ttl: float = 30.0,
        task: str | None = None,
        meta: dict[str, Any] | None = None,
        wait: float | None = None,
        on_lost: Callable[[LeaseHandle], object] | None = None,
        fences: Iterable[Admits] | None = None,
        scope: str | None = None,
        slots: int | None = None,
    ) -> LeaseHandle:
        """A context manager holding ``key``: acquires on entry (waiting up to ``wait``
        seconds), renews in a background thread every ``ttl``/3 seconds, releases on exit.

        See :class:`~tenure.client.lease.LeaseHandle` for how a lost lease is reported.
        ``fences``: each fence's ``admit(key, token)`` runs with the new token as soon as it is
        granted, before the block (a refusal releases the lease and raises). ``scope``:
        ``"subtree"`` (on a key ending in ``/``) holds every key under it too. ``slots``:
        ``key`` is a semaphore of that many slots; the handle holds one slot's lease (its
        ``key`` becomes the slot's, ``gpu#slot/1``, which the heartbeat renews).
        """
        if fences is None:
            return LeaseHandle(self, key, ttl, task, meta, wait, on_lost, scope, slots)
        return FencedLeaseHandle(
            self, key, ttl, task, meta, wait, on_lost, fences=fences, scope=scope, slots=slots
        )

    # fenced register --------------------------------------------------------------------------
    def fenced_write(
        self, key: str, token: int, value: Any, op_id: str | None = None
    ) -> FencedWrite:
        """Write ``value`` under ``key`` if ``token`` is the key's current token."""
        call = lv.FENCED_WRITE.call(key=key, token=token, value=value, op_id=op_id)
        return self._call(call)

    def fenced_read(self, key: str) -> FencedValue:
        """The last value accepted under ``key``."""
        return self._call(lv.FENCED_READ.call(key=key))

    # events (see _events) and principals ---------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """``GET /v1/stats``: endings, expired share over 1 h and 24 h, contention, hold times."""
        return self._call(ov.STATS.call())

    def timeline(self, span_ms: int = 3_600_000, bucket_ms: int = 60_000) -> dict[str, Any]:
        """Lease endings per bucket of ``bucket_ms`` over the last ``span_ms``."""
        return self._call(ov.TIMELINE.call(span_ms=span_ms, bucket_ms=bucket_ms))

    def me(self) -> Principal:
        """The principal this client acts as."""
        return self._call(pv.WHOAMI.call())

    def signin_code(self) -> SigninCode:
        """A one-time code that signs the web dashboard in as this client's principal (good
        once, for a minute): open ``code.link(server_url)``."""
        return self._call(pv.SIGNIN_CODE.call())

    def add_principal(
        self,
        name: str,
        kind: str = "agent",
        roles: tuple[str, ...] | list[str] = (),
        parent: str | None = None,
        ttl_ms: int | None = None,
    ) -> IssuedToken:
        """Create a principal (admins only) and return its first token (or a new one);
        ``ttl_ms``: the token expires that long from now (``None``: never)."""
        call = pv.ADD_PRINCIPAL.call(
            name=name, kind=kind, roles=roles, parent=parent, ttl_ms=ttl_ms
        )
        return self._call(call)

    def revoke_token(self, name: str, token_id: str) -> None:
        """Revoke one token of ``name`` (your own, or anyone's as an admin)."""
        self._call(pv.REVOKE_TOKEN.call(name=name, token_id=token_id))

    def list_principals(self) -> list[Principal]:
        """Every principal (as an admin), else yourself and the agents you dispatched."""
        return self._call(pv.LIST_PRINCIPALS.call())

    def get_principal(self, name: str) -> PrincipalInfo:
        """``name`` and its tokens' ids and times (admins, itself, its ancestors)."""
        return self._call(pv.SHOW_PRINCIPAL.call(name=name))

    def token_floor(self) -> TokenFloor:
        """The token floor and the largest token ever granted (admins)."""
        return self._call(pv.TOKEN_FLOOR.call())

    def set_token_floor(self, floor: int) -> TokenFloor:
        """Raise the token floor (admins): every token granted from now on is larger than
        ``floor``; floors only grow (a lower one is refused, ``InvalidRequest``)."""
        return self._call(pv.SET_TOKEN_FLOOR.call(floor=floor))

    def compact(self, batch: int = 1000, max_batches: int = 100) -> CompactionResult:
        """One compaction pass (admins): what retention no longer keeps is deleted, in
        transactions of at most ``batch`` rows, at most ``max_batches`` of each kind."""
        return self._call(av.COMPACT.call(batch=batch, max_batches=max_batches))

    def set_roles(self, name: str, roles: tuple[str, ...] | list[str]) -> Principal:
        """Replace the roles of ``name`` (admins only); ``[]`` removes them all."""
        return self._call(pv.SET_ROLES.call(name=name, roles=roles))

    def remove_principal(self, name: str) -> RemovedPrincipal:
        """Remove ``name`` and revoke its tokens (admins, its ancestors); its live leases are
        force-released with it; refused (``Conflict``) while it is assigned an open item."""
        return self._call(pv.REMOVE_PRINCIPAL.call(name=name))

    # lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Close connections (or the database in direct mode)."""
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"
