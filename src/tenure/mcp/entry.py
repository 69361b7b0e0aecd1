"""The MCP package's way in, for the other parts of tenure: ``tenure mcp`` serves the tools over
stdio (:func:`serve_stdio`), and the server mounts them at ``/mcp`` (:func:`endpoint`)."""

from __future__ import annotations

from typing import Any

import httpx

from tenure.client import Client
from tenure.core.policy import PolicySet
from tenure.core.servers import server_urls
from tenure.mcp.backend import Backend
from tenure.mcp.http import McpEndpoint
from tenure.mcp.server import Bounds, openapi_bounds
from tenure.mcp.tools import build_server
from tenure.settings import Settings

#: the server's OpenAPI document: its policy's bounds, as ``/mcp`` on it publishes them
OPENAPI = "/openapi.json"


def serve_stdio(client: Client, policy: PolicySet | None) -> None:
    """Serve the tools on stdin/stdout through ``client`` until stdin closes; ``policy`` bounds
    the tools' input schemas (``None``: the server's policy, as its OpenAPI document states it,
    so that the schemas are those of ``/mcp`` on that server)."""
    backend = Backend(client)
    bounds = None if policy is not None or client.direct else server_bounds(client)
    build_server(lambda ctx: backend, policy, bounds).run("stdio")


def server_bounds(client: Client) -> Bounds | None:
    """The bounds of the policy of ``client``'s server (the first of its servers that answers),
    or ``None`` when none says (the schemas then keep the REST bounds; the server still
    checks its policy)."""
    for url in server_urls(client.url):
        try:
            reply = httpx.get(url.rstrip("/") + OPENAPI, timeout=client.timeout, trust_env=False)
            doc: Any = reply.json() if reply.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            continue
        if doc is not None:
            return openapi_bounds(doc) or None
    return None


def endpoint(settings: Settings) -> McpEndpoint:
    """``/mcp`` for the server of ``settings``: the tools over streamable HTTP, its session
    ids signed with ``TENURE_MCP_SESSION_KEY`` (else a key of this process)."""
    key = settings.mcp_session_key
    return McpEndpoint(settings.host, settings.policy, key.encode() if key else None)
