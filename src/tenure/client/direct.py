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
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import psycopg_pool

from tenure.client._shared import Call, Reply, TransportError, transport_error
from tenure.core import validate as v
from tenure.core.models import Principal
from tenure.core.policy import PolicySet
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import InvalidRequest, LeaseHeld
from tenure.service.leases import Service
from tenure.service.principals import Principals
from tenure.settings import Settings
from tenure.store.open import open_store
from tenure.verbs import ops as ov
from tenure.verbs.ops import EventsIn
from tenure.verbs.registry import BY_NAME
from tenure.verbs.table import Services

POLL_MIN_S = 0.02
POLL_MAX_S = 0.25
SLACK_S = 0.005
DB_ERRORS = (sqlite3.OperationalError, psycopg.OperationalError, psycopg_pool.PoolTimeout)

Handler = Callable[[Principal, dict[str, Any]], Any]


class DirectBackend:
    """Runs one call on the database as ``principal`` (trusted, not authenticated).

    Results come back as the JSON the server would send, so the clients parse them alike.
    Thread-safe: the stores are.
    """

    def __init__(self, url: str, principal: str, *, policy: PolicySet | None = None) -> None:
        self.name = v.check_text("principal", principal, 128)
        self.url = url
        self.store = open_store(url)
        settings = Settings.from_env()
        self.service = Service(self.store, policy or settings.policy, stall_ms=settings.stall_ms)
        self.principals = Principals(self.store)
        self.services = Services(self.service, self.principals, settings.limits)
        self._lock = threading.Lock()
        self._closed = False
        self._handlers: dict[str, Handler] = self._item_handlers()

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
        except DB_ERRORS as exc:
            # No connection from the pool: nothing ran. Any other database error: it may have.
            sent = not isinstance(exc, psycopg_pool.PoolTimeout)
            raise transport_error(call, exc, sent=sent) from exc

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

    def _item_handlers(self) -> dict[str, Handler]:
        """The work queue's verbs, answered as the server's item routes answer them."""
        items = self.service.items

        def create(me: Principal, a: dict[str, Any]) -> Any:
            fields = {k: v for k, v in a.items() if k != "title"}
            return {"item": items.create(me, a["title"], **fields).to_dict()}

        def list_items(me: Principal, a: dict[str, Any]) -> Any:
            found = items.list(a.get("status"), a.get("assignee"), a.get("label"), a["limit"])
            return {"items": [x.to_dict() for x in found]}

        def update(me: Principal, a: dict[str, Any]) -> Any:
            changes = {k: v for k, v in a.items() if k != "id"}
            return items.update(me, a["id"], **changes).to_dict()

        def claim(me: Principal, a: dict[str, Any]) -> Any:
            takeover = a.get("takeover", False)
            return items.claim(
                me, a["id"], a.get("ttl_ms"), a.get("task"), takeover, a.get("reason"),
                a.get("session"),
            ).to_dict()  # fmt: skip

        def renew(me: Principal, a: dict[str, Any]) -> Any:
            return {"lease": items.renew(me, a["id"], a.get("epoch"), a.get("ttl_ms")).to_dict()}

        def extend(me: Principal, a: dict[str, Any]) -> Any:
            result = items.extend(me, a["id"], a.get("until"), a.get("by_ms"), a.get("epoch"))
            return result.to_dict()

        def progress(me: Principal, a: dict[str, Any]) -> Any:
            item = items.progress(
                me, a["id"], a["epoch"], a["message"], a.get("percent"), a.get("data")
            )
            return {"item": item.to_dict()}

        def complete(me: Principal, a: dict[str, Any]) -> Any:
            done = items.complete(
                me, a["id"], a["epoch"], a.get("result"), a.get("op_id"), a.get("follow_ups")
            )
            return done.to_dict()

        def dispatch(me: Principal, a: dict[str, Any]) -> Any:
            d = items.dispatch(
                me, a["id"], a.get("agent"), a.get("ttl_ms"), a.get("task"), a.get("session"),
                a.get("takeover", False), a.get("reason"),
            )  # fmt: skip
            return {**d.to_dict(), "agent": {**d.agent.to_dict(), "token": d.token}}

        def queue(me: Principal, a: dict[str, Any]) -> Any:
            return {"items": [x.to_dict() for x in items.queue(a.get("principal", me.name))]}

        return {
            "create_item": create,
            "get_item": lambda me, a: items.get(a["id"]).to_dict(),
            "list_items": list_items,
            "update_item": update,
            "claim_item": claim,
            "renew_item": renew,
            "extend_item": extend,
            "release_item": lambda me, a: items.release(
                me, a["id"], a.get("epoch"), a.get("session")
            ).to_dict(),
            "progress_item": progress,
            "complete_item": complete,
            "cancel_item": lambda me, a: {"item": items.cancel(me, a["id"], a["reason"]).to_dict()},
            "force_release_item": lambda me, a: items.force_release(
                me, a["id"], a["reason"]
            ).to_dict(),
            "dispatch_item": dispatch,
            "reassign_item": lambda me, a: {
                "item": items.reassign(me, a["id"], a["to"], a["reason"]).to_dict()
            },
            "queue": queue,
            "ready": lambda me, a: items.ready_view(a["limit"]).to_dict(),
            "ready_view": lambda me, a: items.ready_view(a["limit"]).to_dict(),
            "briefing": lambda me, a: items.briefing(me, a["ready"]).to_dict(),
        }

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
                return await asyncio.to_thread(self.backend.handle, call)
            except LeaseHeld as held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                await asyncio.sleep(self.backend.wait_hint(held, left, polls))
                polls += 1

    async def close(self) -> None:
        await asyncio.to_thread(self.backend.close)


__all__ = ["AsyncDirectTransport", "DirectBackend", "DirectTransport", "TransportError"]
