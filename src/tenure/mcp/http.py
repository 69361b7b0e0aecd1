"""``/mcp`` on ``tenure serve``: the MCP tools over streamable HTTP, behind the REST bearer tokens.

Every request is authenticated by the one token check of the REST API,
:meth:`tenure.principals.Principals.authenticate`, before the SDK sees it: no token, or an unknown
or revoked one, is refused with the REST API's ``401 unauthenticated`` problem. The principal is
put in the request's ASGI scope, and each tool call acts as the principal of its own request
through a :class:`~tenure.mcp.backend.ServiceBackend`: identity comes from authentication, never
from the MCP session or a header the SDK reads.

The transport is stateless with JSON replies (no server-held MCP sessions, no SSE streams): any
request may reach any of several ``tenure serve`` instances sharing a database, as the REST API
can. The SDK's Host/Origin checks (DNS-rebinding protection) are on when the server binds to
loopback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tenure.core.models import Principal
from tenure.errors import TenureError, Unauthenticated
from tenure.mcp.backend import ServiceBackend
from tenure.mcp.tools import build_server
from tenure.principals import Principals
from tenure.server.problems import on_tenure_error
from tenure.service import Service

PATH = "/mcp"
SCOPE_KEY = "tenure.principal"


def bearer(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, as the REST API reads it."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


class McpEndpoint:
    """The ASGI app of ``/mcp``: authenticate, then hand the request to the SDK."""

    def __init__(self, host: str) -> None:
        self.server = build_server(self.backend_for)
        # Builds the SDK's session manager; its Starlette app is not used (this is the app).
        self.server.streamable_http_app(stateless_http=True, json_response=True, host=host)
        self._service: Service | None = None
        self._principals: Principals | None = None
        self._notify: Callable[[str], None] = lambda key: None

    def mount(self, app: Any) -> None:
        """Route ``/mcp`` (any method) of a Starlette or FastAPI ``app`` to this endpoint."""
        app.router.routes.append(Route(PATH, endpoint=self, include_in_schema=False))

    @asynccontextmanager
    async def running(
        self, service: Service, principals: Principals, notify: Callable[[str], None]
    ) -> AsyncIterator[None]:
        """Serve with ``service`` while the app runs (inside its lifespan)."""
        self._service, self._principals, self._notify = service, principals, notify
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principals = self._principals
        if principals is None:
            raise RuntimeError("the MCP endpoint is not running (the app's lifespan did not run)")
        try:
            principal = await anyio.to_thread.run_sync(principals.authenticate, bearer(scope))
        except TenureError as err:
            response = await on_tenure_error(Request(scope), err)
            await response(scope, receive, send)
            return
        scope = {**scope, SCOPE_KEY: principal}
        await self.server.session_manager.asgi_app(scope, receive, send)

    def backend_for(self, ctx: Context) -> ServiceBackend:
        """The backend of the principal that authenticated the tool call's HTTP request."""
        request = ctx.request_context.request
        principal = getattr(request, "scope", {}).get(SCOPE_KEY)
        if not isinstance(principal, Principal) or self._service is None:
            raise Unauthenticated("the MCP request carries no authenticated principal")
        return ServiceBackend(self._service, principal, self._notify)
