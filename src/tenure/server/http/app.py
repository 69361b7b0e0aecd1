"""The ASGI app: authentication, the routes of the verb table
(:mod:`tenure.server.http.verb_routes`), health.

The event log's long-poll and stream, and the metrics, are in :mod:`tenure.server.http.ops`."""

from __future__ import annotations

import functools
import gc
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import anyio
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from tenure.core.clock import Clock, SystemClock
from tenure.core.models import EventDraft, Principal, freed_keys
from tenure.core.version import __version__
from tenure.server import dashboard
from tenure.server.http import convertors, openapi, problems
from tenure.server.http import schemas as s
from tenure.server.http.auth import Authenticator
from tenure.server.http.deps import St, State
from tenure.server.http.hook_guard import HOOK_PATH, HookGuard
from tenure.server.http.hook_routes import HOOK_SERVED, add_hook_routes
from tenure.server.http.hotpath import HOT, MAX_FAST_BODY, HotPath
from tenure.server.http.ops import HAND_SERVED, add_ops_routes
from tenure.server.http.problems import BodyLimit, JsonByDefault
from tenure.server.http.scrape import StatsCache
from tenure.server.http.timing import Timing
from tenure.server.http.verb_routes import add_verb_routes
from tenure.server.runtime.dbwatch import DatabaseWatch
from tenure.server.runtime.executor import make_executor
from tenure.server.runtime.feed import Bell
from tenure.server.runtime.waiters import Slots, Waiters
from tenure.service.leases import Service
from tenure.service.principals import Principals
from tenure.service.reaper import Reaper
from tenure.service.token_floors import resume
from tenure.settings import HttpSettings, Settings
from tenure.store.health import first_line
from tenure.store.open import open_store
from tenure.verbs.registry import VERBS

P = openapi.problem_responses
#: A request's scope key: the hot path already passed it to FastAPI (it must not try again).
FALLBACK = "tenure.fallback"
NOT_READY = "the database cannot be reached: the server's log says why"
log = logging.getLogger("tenure.server")
HOT_PATHS = frozenset(HOT)


class TenureApp(FastAPI):
    """FastAPI with :class:`tenure.server.http.hotpath.HotPath` in front of all of it: the ordinary
    acquire/renew/release skip the framework; anything else reaches FastAPI unchanged."""

    hot_path_limit = 1 << 20
    _hot: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in HOT_PATHS and FALLBACK not in scope:
            if self._hot is None:
                self._hot = HotPath(super().__call__, lambda: self.tenure, self.limit)
            await self._hot(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] == HOOK_PATH:
            if self._hook_guard is None:  # in front of everything: an edit is never a 4xx/5xx
                self._hook_guard = HookGuard(super().__call__, self.hook_max_body_bytes)
            await self._hook_guard(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    #: the hook route's own body cap (``TENURE_HOOK_MAX_BODY_BYTES``)
    hook_max_body_bytes = 32 * 1024 * 1024
    _hook_guard: ASGIApp | None = None

    #: how requests are read: proxies, header and body timeouts (``tenure.server.run``)
    http_settings: HttpSettings = HttpSettings()
    #: The server's state, set when the lifespan opened the store (a plain attribute, not
    #: ``app.state``: Starlette's ``State.__getattr__`` was a measurable share of a hot call).
    tenure: State | None = None

    @functools.cached_property
    def limit(self) -> int:
        """The largest body the hot path serves itself (larger: the ordinary path's limit)."""
        return min(self.hot_path_limit, MAX_FAST_BODY)


def service_of(app: TenureApp) -> Service:
    """The started server's service (requests only arrive once the lifespan started it)."""
    assert app.tenure is not None, "the server has not started"
    return app.tenure.service


def _wake(bell: Bell, waiters: Waiters, events: Sequence[EventDraft]) -> None:
    """After every commit, however it was made (a route, the reaper, an MCP tool): ring the
    feed's bell and wake the long-polls of each key the events may have freed. A key woken
    twice (a route that also notifies) costs its head one more attempt, nothing else."""
    bell.ring()
    for key in freed_keys(events):
        waiters.notify(key)


#: the server's token check (:meth:`Authenticator.authenticate`): ``(token, client address)``
Authenticate = Callable[[str | None, str | None], Awaitable[Principal]]


class Mount(Protocol):
    """An ASGI endpoint served beside the routes with the started service (``/mcp``: the MCP
    tools; :mod:`tenure.compose` mounts it)."""

    def mount(self, app: FastAPI) -> None: ...
    def running(
        self, service: Service, principals: Principals, authenticate: Authenticate
    ) -> AbstractAsyncContextManager[None]: ...


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    mounts: Sequence[Mount] = (),
    service: Service | None = None,
    direct: bool = False,
) -> TenureApp:
    """The app for ``settings`` (default: from the environment), with ``mounts`` beside its
    routes. Opens the store on startup, or runs on ``service`` (an embedding's: its store
    stays open). ``direct``: the app of a direct-mode client (:mod:`tenure.client.direct`), in
    the caller's process: no reaper, and the process's garbage collector is left alone."""
    settings = settings or Settings.from_env()
    given = service

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:  # (the app is ``app`` below)
        owned = given is None
        service = await anyio.to_thread.run_sync(_open_service, settings, clock) if owned else given
        assert service is not None
        store = service.store
        reaper = Reaper(
            service, retention=settings.retention, compact_every=settings.compact_every_s
        )
        if not direct:
            reaper.start()
        watch = DatabaseWatch(store).start()  # a database gone: 503 at once, /readyz says so
        waiters = Waiters((clock or SystemClock()).now_ms)
        bell = Bell()
        wake = functools.partial(_wake, bell, waiters)
        service.listeners.append(wake)
        # other servers on the same database: their commits wake our followers and waiters
        unlisten = store.listen(bell.ring, waiters.notify)
        executor = make_executor(service)  # the store's group commits (and its checkpoints)
        limits = settings.limits
        principals = Principals(store)
        slots = Slots(limits.max_waits)
        scrape = StatsCache(service.stats, limits.metrics_cache_ms)
        app.tenure = st = State(
            service, principals, waiters, reaper, bell, executor, limits, slots, scrape,
            Authenticator(principals, settings.auth, (clock or SystemClock()).now_ms),
        )  # fmt: skip
        # Everything built so far lives as long as the server: keep it out of the cyclic
        # collector's full passes, which otherwise walked it all every few hundred requests
        # (70-300 ms pauses; a third of the CPU under load).
        if not direct:
            gc.freeze()
        try:
            async with AsyncExitStack() as running:
                for mount in mounts:
                    serving = mount.running(service, st.principals, st.auth.authenticate)
                    await running.enter_async_context(serving)
                yield
        finally:
            service.listeners.remove(wake)
            waiters.close()
            bell.close()
            if unlisten is not None:
                await anyio.to_thread.run_sync(unlisten)
            reaper.stop()
            await anyio.to_thread.run_sync(watch.stop)
            await anyio.to_thread.run_sync(executor.close)
            if owned:
                await anyio.to_thread.run_sync(store.close)

    app = TenureApp(
        title="tenure",
        version=__version__,
        lifespan=lifespan,
        description="Leases with fencing tokens for people, services and agents.",
        generate_unique_id_function=lambda route: route.name,  # operationId: the function name
    )
    problems.install(app)
    openapi.install(app, settings.policy)
    # innermost first: Timing sees the router's match
    app.add_middleware(Timing, metrics=lambda: service_of(app).metrics)
    app.add_middleware(JsonByDefault)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.hot_path_limit = settings.max_body_bytes
    app.hook_max_body_bytes = settings.hook_max_body_bytes
    app.http_settings = settings.http
    convertors.install()  # ``{name:principal}``
    add_verb_routes(app, [verb for verb in VERBS if verb not in (*HAND_SERVED, *HOOK_SERVED)])
    add_hook_routes(app)
    add_other_routes(app)
    add_ops_routes(app)
    dashboard.install(app)  # GET /: the web dashboard (tenure.server.dashboard)
    for mount in mounts:
        mount.mount(app)
    return app


def _open_service(settings: Settings, clock: Clock | None) -> Service:
    store = open_store(settings.db, clock=clock)
    resume(store)  # no token goes back (a restored copy)
    return Service(
        store,
        settings.policy,
        stall_ms=settings.stall_ms,
        retention=settings.compaction,
        quotas=settings.quotas,
    )


def add_other_routes(app: FastAPI) -> None:
    @app.get("/healthz", response_model=s.Health, tags=["operations"])
    def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/readyz", response_model=s.Health, tags=["operations"], responses=P(503))
    def readyz(st: St) -> Any:
        """Ready when the database answers (its last check, every half second, and a read
        now); else `503 unavailable`. `/healthz` is the liveness probe: the process answers,
        whatever its database does. Anyone may ask, so the answer does not say why (a database
        error names hosts, users and paths): the server's log does, and so does the `503` of
        any authenticated call."""
        store = st.service.store
        if store.health.down is not None:
            return problems.unavailable(NOT_READY)
        try:
            store.schema_version()
        except Exception as exc:
            log.error("readyz: the database cannot be reached: %s", first_line(exc))
            return problems.unavailable(NOT_READY)
        return {"status": "ok"}
