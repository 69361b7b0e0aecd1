"""The ASGI app: authentication, the lease, fenced-register and principal routes, health.

The item and claim routes are built from the verb table (:mod:`tenure.verbs.items`)."""

from __future__ import annotations

import functools
import gc
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Annotated, Any, Protocol

import anyio
from fastapi import FastAPI, Path, Query, Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tenure.core.clock import Clock, SystemClock
from tenure.core.version import __version__
from tenure.errors import NotFound
from tenure.server import dashboard
from tenure.server.http import openapi, problems
from tenure.server.http import schemas as s
from tenure.server.http.auth import Authenticator
from tenure.server.http.deps import Caller, KeyParam, St, State, reply, text_query
from tenure.server.http.problems import BodyLimit, JsonByDefault
from tenure.server.http.scrape import StatsCache
from tenure.server.http.timing import Timing
from tenure.server.http.verb_routes import add_verb_routes
from tenure.server.runtime.executor import make_executor
from tenure.server.runtime.feed import Bell
from tenure.server.runtime.waiters import Slots, Waiters
from tenure.service.leases import Service
from tenure.service.principals import Principals
from tenure.service.reaper import Reaper
from tenure.settings import Settings
from tenure.store.open import open_store
from tenure.verbs import fields as f
from tenure.verbs import leases as lv
from tenure.verbs import replies as r
from tenure.verbs.registry import VERBS
from tenure.verbs.summaries import leases_page

P = openapi.problem_responses
#: A request's scope key: the hot path already passed it to FastAPI (it must not try again).
FALLBACK = "tenure.fallback"
HOT_PATHS = frozenset({"/v1/leases/acquire", "/v1/leases/renew", "/v1/leases/release"})


class TenureApp(FastAPI):
    """FastAPI with :class:`tenure.server.http.hotpath.HotPath` in front of all of it: the ordinary
    acquire/renew/release skip the framework; anything else reaches FastAPI unchanged."""

    hot_path_limit = 1 << 20
    _hot: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in HOT_PATHS and FALLBACK not in scope:
            if self._hot is None:
                from tenure.server.http.hotpath import HotPath  # it imports this module

                self._hot = HotPath(super().__call__, lambda: self.tenure, self.limit)
            await self._hot(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    #: The server's state, set when the lifespan opened the store (a plain attribute, not
    #: ``app.state``: Starlette's ``State.__getattr__`` was a measurable share of a hot call).
    tenure: State | None = None

    @functools.cached_property
    def limit(self) -> int:
        """The largest body the hot path serves itself (larger: the ordinary path's limit)."""
        from tenure.server.http.hotpath import MAX_FAST_BODY  # it imports this module

        return min(self.hot_path_limit, MAX_FAST_BODY)


def service_of(app: TenureApp) -> Service:
    """The started server's service (requests only arrive once the lifespan started it)."""
    assert app.tenure is not None, "the server has not started"
    return app.tenure.service


class Mount(Protocol):
    """An ASGI endpoint served beside the routes with the started service (``/mcp``: the MCP
    tools; :mod:`tenure.compose` mounts it)."""

    def mount(self, app: FastAPI) -> None: ...
    def running(
        self, service: Service, principals: Principals
    ) -> AbstractAsyncContextManager[None]: ...


def create_app(
    settings: Settings | None = None, *, clock: Clock | None = None, mounts: Sequence[Mount] = ()
) -> TenureApp:
    """The app for ``settings`` (default: from the environment), with ``mounts`` beside its
    routes. Opens the store on startup."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:  # (the app is ``app`` below)
        store = await anyio.to_thread.run_sync(lambda: open_store(settings.db, clock=clock))
        service = Service(store, settings.policy, stall_ms=settings.stall_ms)
        reaper = Reaper(service, retention=settings.retention).start()
        waiters = Waiters((clock or SystemClock()).now_ms)
        bell = Bell()
        service.listeners.append(bell.ring)
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
        gc.freeze()
        try:
            async with AsyncExitStack() as running:
                for mount in mounts:
                    await running.enter_async_context(mount.running(service, st.principals))
                yield
        finally:
            waiters.close()
            bell.close()
            if unlisten is not None:
                await anyio.to_thread.run_sync(unlisten)
            reaper.stop()
            await anyio.to_thread.run_sync(executor.close)
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
    add_lease_routes(app)
    add_verb_routes(app, VERBS)
    add_other_routes(app)
    from tenure.server.http.ops import add_ops_routes  # it imports this module's dependencies

    add_ops_routes(app)
    from tenure.server.http.principal_routes import add_principal_routes  # as for the ops

    add_principal_routes(app)  # after DELETE …/tokens/{token_id}: {name:path} matches it too
    from tenure.server.http.admin_routes import add_admin_routes  # as for the ops

    add_admin_routes(app)
    dashboard.install(app)  # GET /: the web dashboard (tenure.server.dashboard)
    for mount in mounts:
        mount.mount(app)
    return app


def add_lease_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/leases/renew-all",
        response_model=r.RenewAllReply,
        tags=["leases"],
        responses=P(400, 401, 413, 422),
    )
    def renew_all(body: lv.RenewAllIn, me: Caller, st: St) -> Response:
        """Renew every live lease of yours (only your `session`'s when given; or the `keys`)."""
        if body.keys is None:  # the database writes the reply's JSON, passed on unparsed
            json_reply = st.service.renew_all_json(me, body.session)
            return Response(json_reply, media_type="application/json")
        return reply(st.service.renew_all(me, body.keys, body.session).to_dict())

    @app.post(
        "/v1/leases/extend",
        response_model=r.ExtendReply,
        tags=["leases"],
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def extend(body: lv.ExtendIn, me: Caller, st: St) -> dict[str, Any]:
        return st.service.extend(me, body.key, body.token, body.until, body.by_ms).to_dict()

    @app.post(
        "/v1/leases/release",
        response_model=r.ReleaseReply,
        tags=["leases"],
        responses=P(400, 401, 403, 413, 422),
    )
    def release(body: lv.ReleaseIn, me: Caller, st: St) -> Response:
        """End your lease: the lease of `token` (any session of yours), else your `session`'s.
        `released: false` when there is nothing of yours to end, with the `reason`."""
        result = st.service.release(me, body.key, body.token, body.session)
        if result.released:
            st.waiters.notify(body.key)
        return reply(result.to_dict())

    @app.post(
        "/v1/leases/force-release",
        response_model=r.ForceReleaseReply,
        tags=["leases"],
        responses=P(400, 401, 403, 404, 413, 422),
    )
    def force_release(body: lv.ForceReleaseIn, me: Caller, st: St) -> dict[str, Any]:
        result = st.service.force_release(me, body.key, body.reason)
        st.waiters.notify(body.key)
        return result.to_dict()

    @app.get("/v1/leases", response_model=r.LeasesReply, tags=["leases"], responses=P(401, 422))
    def list_leases(
        me: Caller,
        st: St,
        prefix: Annotated[str | None, text_query(1024, "keys starting with", blank=True)] = None,
        holder: Annotated[str | None, text_query(1024, "held by", blank=True)] = None,
        task: Annotated[str | None, text_query(1024, "serving this task", blank=True)] = None,
        limit: Annotated[int, Query(ge=1, le=100_000)] = 1000,
        after: Annotated[
            str | None, text_query(1024, "only keys sorting after this one (the next page)")
        ] = None,
    ) -> dict[str, Any]:
        """Live leases, by key; page with `after` set to the previous page's `next`.

        A page holds at most the server's page cap of leases (1,000 unless configured) and
        stops early once its JSON reaches the server's list budget: either way `truncated:
        true`, and `next` is the key to go on after."""
        page = min(limit, st.limits.leases_page)
        leases = st.service.list(prefix, holder, task, page, after)
        out = leases_page(leases, st.limits.list_bytes)
        if not out["truncated"] and page < limit and len(leases) >= page:
            out.update(truncated=True, next=leases[-1].key)  # cut by the page cap
        return out


def add_other_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/fenced/write",
        response_model=r.FencedWriteReply,
        tags=["fenced"],
        responses={**P(400, 401, 403, 409, 413, 422), 200: openapi.FENCED_LINKS},
    )
    def fenced_write(body: lv.FencedWriteIn, me: Caller, st: St) -> dict[str, Any]:
        """Store `value` if `token` is the key's current token and you hold it.

        An older token is `409 stale_token` whoever sends it; the current token from anyone but
        its holder is `403 not_holder`. A repeated `op_id` under the same token answers the
        first write (`duplicate: true`); with another value, `409 idempotency_conflict`.
        """
        return st.service.write(me, body.key, body.token, body.value, body.op_id).to_dict()

    @app.get(
        "/v1/fenced/{key:path}",
        response_model=r.FencedValueReply,
        tags=["fenced"],
        responses=P(401, 404, 413, 422),
    )
    def fenced_read(key: KeyParam, request: Request, me: Caller, st: St) -> dict[str, Any]:
        """The last value accepted under `key`; `GET /v1/fenced/write` (never written): `405`."""
        try:
            return st.service.read(key).to_dict()
        except NotFound:
            problems.refuse_other_method(request)
            raise

    @app.get("/v1/me", response_model=r.MeReply, tags=["principals"], responses=P(401))
    def whoami(me: Caller) -> dict[str, Any]:
        return {"principal": me.to_dict()}

    @app.post(
        "/v1/principals",
        response_model=r.PrincipalReply,
        tags=["principals"],
        status_code=201,
        responses={**P(400, 401, 403, 404, 409, 413, 422), 201: openapi.PRINCIPAL_LINKS},
    )
    def add_principal(body: s.PrincipalIn, me: Caller, st: St) -> dict[str, Any]:
        issued = st.principals.create(
            me, body.name, body.kind, list(body.roles), body.parent, body.ttl_ms
        )
        return issued.to_dict()

    @app.delete(
        "/v1/principals/{name:path}/tokens/{token_id}",
        status_code=204,
        tags=["principals"],
        responses=P(401, 403, 404, 422),
    )
    def revoke_token(
        name: Annotated[str, Path(json_schema_extra={"pattern": f.NAME_PATTERN})],
        token_id: Annotated[str, Path(json_schema_extra={"pattern": f.TOKEN_ID_PATTERN})],
        me: Caller,
        st: St,
    ) -> None:
        """Revoke one token of `name`: admins revoke anyone's, a principal its own, and an
        ancestor (the principal that dispatched `name`, and its own ancestors) those of the
        agents below it; anyone else gets `403 forbidden`. The `token_revoked` event names
        who revoked it."""
        st.principals.revoke(me, name, token_id)

    @app.get("/healthz", response_model=s.Health, tags=["operations"])
    def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/readyz", response_model=s.Health, tags=["operations"], responses=P(503))
    def readyz(st: St) -> Any:
        """Ready when the database answers."""
        try:
            st.service.store.schema_version()
        except Exception as exc:
            return problems.unavailable(f"the database cannot be reached: {type(exc).__name__}")
        return {"status": "ok"}
