"""Direct mode: the client API in this process, on the database, with no server.

``Client("sqlite:///path/tenure.db", principal="cron")`` (or a ``postgresql://`` URL) is the same
client as over HTTP, whose requests go to a server's own app built on that database in this
process (no socket): each call goes through the real routes, their validation, the verb table
and the problem replies, so both modes send the same requests, get the same bytes back, return
the same models and raise the same errors. The app runs on an event loop in a thread of its
own; the clients of one database in a process share it (its store, its waiters), and the last
one to close stops it.

**Direct mode trusts the principal name it is given.** There is no token and no
authentication: whoever can open the database can act as anyone, as the CLI's ``principal add``
does. The roles of a principal that exists in the database (``admin``, ``supervisor``) and its
parent apply (a change of them made elsewhere is seen within a second, as a token's is); an
unknown name acts as a plain principal of kind ``service``. The name travels
in an ASGI scope key that only this process's in-process transport sets
(:data:`tenure.verbs.fields.TRUSTED_PRINCIPAL`): no HTTP request can set it, whatever header it
sends. Use direct mode for cron jobs and scripts on a host that owns the database, never to
serve other callers.

There is no reaper in direct mode: leases still end on time (expiry is the store's job), but
the ``expired`` event of a lapsed lease is recorded when a server's reaper, or the next call on
the key, gets to it. ``wait_ms`` waits in the app's own line for the key, in turns of at most
:data:`TURN_MS`: a release through any direct client of this database in this process, or the
holder's deadline, wakes it at once; a release by another process is seen at the next turn.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import math
import threading
import time
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import httpx

from tenure.client import _transport as tr
from tenure.client._call import Call, Reply, TransportError, transport_error
from tenure.client._inprocess import BASE, AppTransport, LoopAppTransport, scoped
from tenure.core import validate as v
from tenure.core.policy import PolicySet
from tenure.core.validate import MAX_WAIT_MS
from tenure.server.http.app import create_app
from tenure.settings import Settings
from tenure.verbs.fields import TRUSTED_PRINCIPAL

#: the longest one turn of a waiting acquisition waits in the app's line (ms)
TURN_MS = 250

if TYPE_CHECKING:
    from tenure.service.leases import Service
    from tenure.settings import Limits


class Running:
    """A server's app on an event loop of its own thread, its lifespan started: the store
    open, the app's waiters and executor running (no reaper: ``direct=True``)."""

    def __init__(self, settings: Settings, service: Service | None = None) -> None:
        # an embedding's clock (a test's fake one) is the app's too
        clock = getattr(getattr(service and service.store, "connector", None), "clock", None)
        self.app = create_app(settings, clock=clock, service=service, direct=True)
        self.users = 0
        with contextlib.ExitStack() as stack:
            self.portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
            life = self.app.router.lifespan_context(self.app)
            stack.enter_context(self.portal.wrap_async_context_manager(life))
            self._stack = stack.pop_all()
        with _RUNNING_LOCK:
            _STARTED.add(self)

    def stop(self) -> None:
        with _RUNNING_LOCK:
            _STARTED.discard(self)
        self._stack.close()


def _stop_all() -> None:
    """At exit: stop the apps of clients nobody closed (their loops would wait for them)."""
    for running in list(_STARTED):
        with contextlib.suppress(Exception):
            running.stop()


#: the apps this process runs for direct-mode clients, one per database (and settings): the
#: clients of one database share its app, its waiters and its store
_RUNNING: dict[str, Running] = {}
#: every app started and not stopped yet (stopped at exit if its clients were not closed)
_STARTED: set[Running] = set()
_RUNNING_LOCK = threading.RLock()
atexit.register(_stop_all)


class DirectBackend:
    """A client's share of the server's app on the database, in this process, whose requests
    act as ``principal`` (trusted, not authenticated). Thread-safe."""

    def __init__(self, url: str, principal: str, *, policy: PolicySet | None = None) -> None:
        name = v.check_text("principal", principal, 128)
        overrides: dict[str, Any] = {"db": url}
        if policy is not None:
            overrides["policy"] = policy
        settings = Settings.from_env(**overrides)
        key = repr(settings)
        with _RUNNING_LOCK:
            running = _RUNNING.get(key)
            if running is None:
                running = _RUNNING[key] = Running(settings)
            running.users += 1
        self._use(name, running, key)
        self.url = url

    @classmethod
    def on(cls, service: Service, principal: str, limits: Limits | None = None) -> DirectBackend:
        """Calls as ``principal`` on ``service`` (an embedding's, or a test's with a fake
        clock), whose store stays open when the client closes (an app of its own)."""
        name = v.check_text("principal", principal, 128)
        settings = Settings.from_env(policy=service.policy)
        if limits is not None:
            settings = dataclasses.replace(settings, limits=limits)
        backend = cls.__new__(cls)
        running = Running(settings, service)
        running.users = 1
        backend._use(name, running, None)
        backend.url = ""
        return backend

    def _use(self, name: str, running: Running, key: str | None) -> None:
        self.name = name
        self.running, self._key = running, key
        self.portal = running.portal
        self.app = scoped(running.app, {TRUSTED_PRINCIPAL: name})
        self._lock = threading.Lock()
        self._closed = False

    def check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the client is closed")

    def close(self) -> None:
        """Leave the app; the last client of it stops it (and closes the store)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with _RUNNING_LOCK:
            self.running.users -= 1
            last = self.running.users == 0
            if last and self._key is not None and _RUNNING.get(self._key) is self.running:
                del _RUNNING[self._key]
        if last:
            self.running.stop()


def turns(call: Call[Any]) -> tuple[float, Call[Any]] | None:
    """When ``call`` is an acquisition that waits: its deadline (monotonic) and its first
    turn; ``None`` otherwise (a bad ``wait_ms`` goes as it is: the app refuses it)."""
    wait = (call.body or {}).get("wait_ms") if call.op == "acquire" else None
    if not isinstance(wait, int) or isinstance(wait, bool) or not 0 < wait <= MAX_WAIT_MS:
        return None
    deadline = time.monotonic() + wait / 1000
    return deadline, turn(call, deadline)


def turn(call: Call[Any], deadline: float) -> Call[Any]:
    """``call`` waiting at most one turn of what is left until ``deadline``."""
    left = max(1, min(TURN_MS, math.ceil((deadline - time.monotonic()) * 1000)))
    body = {**(call.body or {}), "wait_ms": left}
    return dataclasses.replace(call, body=body, wait_s=left / 1000)


def held(reply: Reply, deadline: float) -> bool:
    """Whether a turn ended with the key still held and time left to wait."""
    refused = reply.status == 409 and isinstance(reply.data, dict)
    return refused and reply.data.get("code") == "lease_held" and time.monotonic() < deadline


class DirectTransport:
    """Direct mode for :class:`~tenure.client.Client`: each request runs on the app's loop
    while the calling thread waits for it."""

    def __init__(self, backend: DirectBackend) -> None:
        self.backend = backend
        app = AppTransport(backend.app, backend.portal.call)
        self._http = httpx.Client(base_url=BASE, headers=tr.http_headers(None), transport=app)

    def send(self, call: Call[Any], timeout: float) -> Reply:
        waiting = turns(call)
        if waiting is None:
            return self._once(call, timeout)
        deadline, first = waiting
        reply = self._once(first, timeout)
        while held(reply, deadline):
            reply = self._once(turn(call, deadline), timeout)
        return reply

    def _once(self, call: Call[Any], timeout: float) -> Reply:
        self.backend.check_open()
        try:
            response = self._http.send(tr.http_request(self._http, call, timeout))
        except httpx.TransportError as exc:
            raise transport_error(call, exc) from exc
        return tr.reply_from_httpx(response)

    def close(self) -> None:
        self._http.close()
        self.backend.close()


class AsyncDirectTransport:
    """Direct mode for :class:`~tenure.client.AsyncClient`: each request runs on the app's
    loop while the caller's loop awaits it (cancelled meanwhile, the request still ends first:
    :class:`~tenure.client._inprocess.LoopAppTransport`)."""

    def __init__(self, backend: DirectBackend) -> None:
        self.backend = backend
        app = LoopAppTransport(
            AppTransport(backend.app, backend.portal.call), backend.portal.start_task_soon
        )
        self._http = httpx.AsyncClient(base_url=BASE, headers=tr.http_headers(None), transport=app)

    async def send(self, call: Call[Any], timeout: float) -> Reply:
        waiting = turns(call)
        if waiting is None:
            return await self._once(call, timeout)
        deadline, first = waiting
        reply = await self._once(first, timeout)
        while held(reply, deadline):
            reply = await self._once(turn(call, deadline), timeout)
        return reply

    async def _once(self, call: Call[Any], timeout: float) -> Reply:
        self.backend.check_open()
        try:
            response = await self._http.send(tr.http_request(self._http, call, timeout))
        except httpx.TransportError as exc:
            raise transport_error(call, exc) from exc
        return tr.reply_from_httpx(response)

    async def close(self) -> None:
        await self._http.aclose()
        await asyncio.to_thread(self.backend.close)


__all__ = ["AsyncDirectTransport", "DirectBackend", "DirectTransport", "TransportError"]
