"""Direct mode: the client API in this process, on the database, with no server.

``Client("sqlite:///path/tenure.db", principal="cron")`` (or a ``postgresql://`` URL) opens the
database and runs each call through :class:`tenure.Service` (and
:class:`tenure.service.principals.Principals`), then reads the result with the same parsing as a
server's
reply, so both modes return the same models and raise the same errors.

**Direct mode trusts the principal name it is given.** There is no token and no
authentication: whoever can open the database can act as anyone, as the CLI's ``principal add``
does. The roles of a principal that exists in the database (``admin``, ``supervisor``) and its
parent apply; an unknown name acts as a plain principal of kind ``service``. Use it for cron
jobs and scripts on a host that owns the database, never to serve other callers.

There is no reaper in direct mode: leases still end on time (expiry is the store's job), but
the ``expired`` event of a lapsed lease is recorded when a server's reaper, or the next call on
the key, gets to it. ``wait_ms`` is served by polling the key (a server wakes waiters at once on
release; in direct mode a release by another process is seen within a poll interval).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from tenure.client._wire import Call, Reply, TransportError, transport_error
from tenure.core import validate as v
from tenure.core.models import Principal
from tenure.core.policy import PolicySet
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import InvalidRequest, LeaseHeld
from tenure.service.leases import Service
from tenure.service.principals import Principals
from tenure.settings import Limits, Settings
from tenure.store.errors import failure
from tenure.store.open import open_store
from tenure.verbs import ops as ov
from tenure.verbs.ops import EventsIn
from tenure.verbs.registry import BY_NAME
from tenure.verbs.table import Services

POLL_MIN_S = 0.02
POLL_MAX_S = 0.25
SLACK_S = 0.005

Handler = Callable[[Principal, dict[str, Any]], Any]


class DirectBackend:
    """Runs one call on the database as ``principal`` (trusted, not authenticated).

    Results come back as the JSON the server would send, so the clients parse them alike.
    Thread-safe: the stores are.
    """

    def __init__(self, url: str, principal: str, *, policy: PolicySet | None = None) -> None:
        store = open_store(url)
        settings = Settings.from_env()
        service = Service(
            store,
            policy or settings.policy,
            stall_ms=settings.stall_ms,
            retention=settings.compaction,
            quotas=settings.quotas,
        )
        self._serve(service, principal, settings.limits, owns=True)
        self.url = url

    @classmethod
    def on(cls, service: Service, principal: str, limits: Limits | None = None) -> DirectBackend:
        """Calls as ``principal`` on ``service`` (an embedding's, or a test's with a fake
        clock), whose store stays open when the client closes."""
        backend = cls.__new__(cls)
        backend._serve(service, principal, limits or Limits(), owns=False)
        backend.url = ""
        return backend

    def _serve(self, service: Service, principal: str, limits: Limits, *, owns: bool) -> None:
        self.name = v.check_text("principal", principal, 128)
        self.store = service.store
        self.service = service
        self.principals = Principals(self.store)
        self.services = Services(self.service, self.principals, limits)
        self._owns = owns
        self._lock = threading.Lock()
        self._closed = False
        self._handlers: dict[str, Handler] = {}

    def principal(self) -> Principal:
        """Who the calls act as: the stored principal of that name, else a plain one."""
        return self.store.get_principal(self.name) or Principal(self.name)

    def handle(self, call: Call[Any]) -> Reply:
        """One try of ``call``: the reply's JSON, or the service's own exception."""
        if self._closed:
            raise RuntimeError("the client is closed")
        verb = BY_NAME.get(call.op)
        handler = self._handlers.get(call.op)
        if verb is None and handler is None:
            raise NotImplementedError(f"direct mode has no {call.op!r}")
        try:
            if verb is ov.EVENTS:  # its long-poll: polling the verb
                return Reply(200, self._events(verb.args(call.args())))
            if verb is not None:  # a verb of the table: the same run and JSON as a server's
                out = verb(self.services, self.principal(), verb.args(call.args()))
                return Reply(verb.status, json.loads(out) if isinstance(out, bytes) else out)
            assert handler is not None
            return Reply(200, handler(self.principal(), call.args()))
        except Exception as exc:
            found = failure(exc)  # a database's failure: the call may have run, or not
            if found is None:
                raise
            raise transport_error(call, exc, sent=found.sent) from exc

    def _events(self, args: EventsIn) -> dict[str, Any]:
        """A page of events; ``wait_ms`` is served by polling (no server to ring a bell)."""
        wait_ms = args.wait_ms or 0
        if not v.is_int(wait_ms) or not 0 <= wait_ms <= MAX_WAIT_MS:
            raise InvalidRequest(f"wait_ms: from 0 to {MAX_WAIT_MS}", field="wait_ms")
        deadline = time.monotonic() + wait_ms / 1000
        pause = POLL_MIN_S
        while True:
            page = ov.EVENTS.run(self.services, self.principal(), args)
            left = deadline - time.monotonic()
            if page.events or left <= 0:
                return ov.events_wire(page)
            args = args.model_copy(update={"after": page.next})
            time.sleep(min(pause, left))
            pause = min(pause * 2, POLL_MAX_S)

    def wait_hint(self, held: LeaseHeld, left: float, polls: int) -> float:
        """How long to sleep before trying a held key again."""
        until_expiry = ((held.expires_at or 0) - self.store.now_ms()) / 1000 + SLACK_S
        backoff = min(POLL_MAX_S, POLL_MIN_S * 2.0**polls)
        return max(0.0, min(left, until_expiry, backoff))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._owns:
            self.store.close()


def _wait_ms(call: Call[Any]) -> int:
    if call.op != "acquire":
        return 0
    wait = (call.body or {}).get("wait_ms")
    if wait is None:
        return 0
    if not v.is_int(wait) or not 0 <= wait <= MAX_WAIT_MS:
        raise InvalidRequest(f"wait_ms: must be between 0 and {MAX_WAIT_MS}", field="wait_ms")
    return int(wait)


class DirectTransport:
    """Direct mode for :class:`~tenure.client.Client`: calls run in the calling thread."""

    def __init__(self, backend: DirectBackend) -> None:
        self.backend = backend

    def send(self, call: Call[Any], timeout: float) -> Reply:
        wait_ms = _wait_ms(call)
        deadline = time.monotonic() + wait_ms / 1000
        polls = 0
        while True:
            try:
                return self.backend.handle(call)
            except LeaseHeld as held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                time.sleep(self.backend.wait_hint(held, left, polls))
                polls += 1

    def close(self) -> None:
        self.backend.close()


class AsyncDirectTransport:
    """Direct mode for :class:`~tenure.client.AsyncClient`: each try runs in a worker thread,
    and a wait sleeps on the event loop between tries."""

    def __init__(self, backend: DirectBackend) -> None:
        self.backend = backend

    async def send(self, call: Call[Any], timeout: float) -> Reply:
        wait_ms = _wait_ms(call)
        deadline = time.monotonic() + wait_ms / 1000
        polls = 0
        while True:
            try:
                return await self._try(call)
            except LeaseHeld as held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                await asyncio.sleep(self.backend.wait_hint(held, left, polls))
                polls += 1

    async def _try(self, call: Call[Any]) -> Reply:
        """One try in a worker thread. Cancelled meanwhile, it still ends before the
        cancellation goes on: what it did (a grant, say) is done by the time the client looks,
        so a lease granted to a cancelled acquisition can be found and released."""
        attempt = asyncio.ensure_future(asyncio.to_thread(self.backend.handle, call))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await attempt
            raise

    async def close(self) -> None:
        await asyncio.to_thread(self.backend.close)


__all__ = ["AsyncDirectTransport", "DirectBackend", "DirectTransport", "TransportError"]
