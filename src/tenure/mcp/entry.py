"""The MCP package's way in, for the other parts of tenure: ``tenure mcp`` serves the tools over
stdio (:func:`serve_stdio`), and the server mounts them at ``/mcp`` (:func:`endpoint`)."""

from __future__ import annotations

from tenure.client import Client
from tenure.core.policy import PolicySet
from tenure.mcp.backend import Backend
from tenure.mcp.http import McpEndpoint
from tenure.mcp.tools import build_server
from tenure.settings import Settings


def serve_stdio(client: Client, policy: PolicySet | None) -> None:
    """Serve the tools on stdin/stdout through ``client`` until stdin closes; ``policy`` bounds
    the tools' input schemas (``None``: the server's policy applies)."""
    backend = Backend(client)
    build_server(lambda ctx: backend, policy).run("stdio")


def endpoint(settings: Settings) -> McpEndpoint:
    """``/mcp`` for the server of ``settings``: the tools over streamable HTTP, its session
    ids signed with ``TENURE_MCP_SESSION_KEY`` (else a key of this process)."""
    key = settings.mcp_session_key
    return McpEndpoint(settings.host, settings.policy, key.encode() if key else None)
