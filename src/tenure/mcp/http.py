"""``/mcp`` on ``tenure serve``: the MCP tools over streamable HTTP, behind the REST bearer tokens.

Every request is authenticated by the one token check of the REST API (the server's, with its
caches and its limit on failed authentications per client address) before the SDK sees it: no
token, or an unknown or revoked one, is refused with the REST API's ``401 unauthenticated``
problem, and a client address past its budget of failures gets ``429 rate_limited``. The
principal is put in the request's ASGI scope, and each tool call acts as the principal of its
own request through a :class:`~tenure.mcp.backend.Backend`: the same client as ``tenure mcp``
over stdio, whose requests go to this server's app in-process with the request's own bearer
token (:mod:`tenure.mcp.loopback`). Identity comes from authentication, never from the MCP
session or a header the SDK reads.

The transport is stateless with JSON replies (no server-held MCP sessions, no SSE streams): any
request may reach any of several ``tenure serve`` instances sharing a database, as the REST API
can. The SDK's Host/Origin checks (DNS-rebinding protection) are on when the server binds to
loopback.

Each MCP connection is a session of its principal, named by the connection's ``Mcp-Session-Id``:
the answer to the ``initialize`` handshake carries a new id, issued by the server and bound to
the authenticated principal (:mod:`tenure.mcp.sessions`), which the client sends back with every
later request of the connection; the tools of a request act in the session ``mcp-http:<nonce>``
of its id, a namespace no REST call may name. An id the server did not issue, or issued to
another principal, is answered ``404`` (the MCP answer to an unknown session: the client starts
a new one with ``initialize``). The server keeps no session table: any instance with the same
session key (``TENURE_MCP_SESSION_KEY``; else each process has its own) serves any request of
any connection. A request without the header (a client that skipped the handshake) acts in the
principal's default session ``""``, as a REST call without ``session`` does. Protocol revisions
without a handshake (2026-07-28) have no connection
to tell two agents under one token apart: their requests are answered with the version
negotiation error (-32022) naming the handshake revisions, and clients fall back to the
handshake (the SDKs' ``auto`` mode does so by itself). ``GET`` (a stream of server-initiated
messages: tenure sends none) and ``DELETE`` (there is nothing to end: a session's leases lapse on
their own once its calls stop) are answered ``405``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from tenure.core.models import Principal
from tenure.core.policy import PolicySet
from tenure.core.validate import bearer_token
from tenure.errors import NotFound, TenureError, Unauthenticated
from tenure.mcp.backend import Backend
from tenure.mcp.loopback import app_client
from tenure.mcp.sessions import SessionIds
from tenure.mcp.tools import build_server
from tenure.service.leases import Service
from tenure.service.principals import Principals

#: the server's token check: ``(token, client address) -> principal``, or it raises
Authenticate = Callable[[str | None, str | None], Awaitable[Principal]]
PATH = "/mcp"
SCOPE_KEY = "tenure.principal"
SESSION_KEY = "tenure.session"
SESSION_HEADER = "Mcp-Session-Id"
SNIFF_LIMIT = 64 * 1024  # an initialize request is far smaller
PROBLEM = "application/problem+json"


def header(scope: Scope, name: bytes) -> str | None:
    """The value of the request's header ``name`` (lower case), if it has one."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def bearer(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, as the REST API reads it."""
    return bearer_token(header(scope, b"authorization"))


def problem(err: TenureError, scope: Scope) -> Response:
    """``err`` as the REST API answers it: its problem document; a 401 with the challenge of
    RFC 6750, naming a rejected bearer token."""
    headers = {}
    if err.status == 401:
        given = (header(scope, b"authorization") or "").lower().startswith("bearer ")
        headers["WWW-Authenticate"] = 'Bearer realm="tenure"' + (
            ', error="invalid_token"' if given else ""
        )
    retry = getattr(err, "retry_after_s", None)
    if isinstance(retry, int):
        headers["Retry-After"] = str(retry)
    return JSONResponse(err.to_problem(), err.status, headers, media_type=PROBLEM)


def session_of(scope: Scope, ids: SessionIds, principal: Principal) -> str:
    """The tenure session of the request's ``Mcp-Session-Id``; ``""`` without one. An id the
    server did not issue to ``principal`` is ``not_found`` (404)."""
    given = header(scope, b"mcp-session-id")
    if not given:
        return ""
    session = ids.session(principal.name, given)
    if session is None:
        raise NotFound(
            f"{SESSION_HEADER}: no such MCP session of {principal.name!r}; start a new one "
            "with initialize",
            what="mcp_session",
        )
    return session


def is_initialize(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"


def handing_out_sessions(
    receive: Receive, send: Send, issue: Callable[[], str]
) -> tuple[Receive, Send]:
    """``receive`` and ``send`` of a request without a session: a successful ``initialize``
    is answered with a new ``Mcp-Session-Id``, which names the connection's session from then
    on. The SDK reads the whole body before it answers, so the body is known by then."""
    body = bytearray()

    async def sniffing() -> Message:
        message = await receive()
        if message["type"] == "http.request" and len(body) <= SNIFF_LIMIT:
            body.extend(message.get("body", b""))
        return message

    async def stamping(message: Message) -> None:
        if (
            message["type"] == "http.response.start"
            and message.get("status") == 200
            and is_initialize(bytes(body))
        ):
            given = (SESSION_HEADER.lower().encode(), issue().encode("ascii"))
            message = {**message, "headers": [*message.get("headers", []), given]}
        await send(message)

    return sniffing, stamping


async def handshake_required(version: str, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a request of a protocol revision without a handshake (2026-07-28) with the
    version negotiation error: clients retry with the ``initialize`` handshake."""
    body = b""
    more = True
    while more and len(body) <= SNIFF_LIMIT:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False) and message["type"] == "http.request"
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    request_id = request.get("id") if isinstance(request, dict) else None
    error = {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "tenure's /mcp speaks the initialize handshake: each connection is a "
        f"session; use one of {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}",
        "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
    }
    reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
    await JSONResponse(reply, status_code=400)(scope, receive, send)


class McpEndpoint:
    """The ASGI app of ``/mcp``: authenticate, then hand the request to the SDK."""

    def __init__(
        self, host: str, policy: PolicySet | None = None, session_key: bytes | None = None
    ) -> None:
        """``session_key``: what the ``Mcp-Session-Id`` values are signed with (the same on
        every server of one database; ``None``: a random key of this process)."""
        self.ids = SessionIds(session_key)
        self.server = build_server(self.backend_for, policy)
        # Builds the SDK's session manager; its Starlette app is not used (this is the app).
        self.server.streamable_http_app(stateless_http=True, json_response=True, host=host)
        self._app: Any = None
        self._principals: Principals | None = None
        self._authenticate: Authenticate | None = None

    def mount(self, app: Any) -> None:
        """Route ``/mcp`` (any method) of a Starlette or FastAPI ``app`` to this endpoint; the
        tools call that app's routes."""
        self._app = app
        app.router.routes.append(Route(PATH, endpoint=self, include_in_schema=False))

    @asynccontextmanager
    async def running(
        self, service: Service, principals: Principals, authenticate: Authenticate | None = None
    ) -> AsyncIterator[None]:
        """Serve while the app runs (inside its lifespan; the tools call its routes, not
        ``service``). ``authenticate``: the server's own token check (its caches and its limit
        on failed authentications per client address); without it, ``principals`` in a
        thread."""
        self._principals = principals
        self._authenticate = authenticate
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principals = self._principals
        if principals is None:
            raise RuntimeError("the MCP endpoint is not running (the app's lifespan did not run)")
        try:
            principal = await self._principal(principals, scope)
            session = session_of(scope, self.ids, principal)
        except TenureError as err:
            await problem(err, scope)(scope, receive, send)
            return
        if scope.get("method") in ("GET", "DELETE"):
            await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
            return
        version = header(scope, b"mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await handshake_required(version, scope, receive, send)
            return
        if not session:
            issue = partial(self.ids.issue, principal.name)
            receive, send = handing_out_sessions(receive, send, issue)
        scope = {**scope, SCOPE_KEY: principal, SESSION_KEY: session}
        await self.server.session_manager.asgi_app(scope, receive, send)

    async def _principal(self, principals: Principals, scope: Scope) -> Principal:
        if self._authenticate is None:
            return await anyio.to_thread.run_sync(principals.authenticate, bearer(scope))
        client = scope.get("client")
        return await self._authenticate(bearer(scope), client[0] if client else None)

    def backend_for(self, ctx: Context) -> Backend:
        """The backend of the principal that authenticated the tool call's HTTP request, in
        the session of its connection: a client of this app with the request's token."""
        request = ctx.request_context.request
        scope = getattr(request, "scope", {})
        principal = scope.get(SCOPE_KEY)
        if not isinstance(principal, Principal) or self._app is None:
            raise Unauthenticated("the MCP request carries no authenticated principal")
        client = scope.get("client")
        address = (client[0], client[1]) if client else None
        return Backend(app_client(self._app, bearer(scope), scope.get(SESSION_KEY, ""), address))
