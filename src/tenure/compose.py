"""The composition root: the server with the MCP tools mounted at ``/mcp``.

The fronts never import each other: the HTTP server (:mod:`tenure.server`) knows nothing of
MCP, and the MCP endpoint (:mod:`tenure.mcp.http`) nothing of the routes. This module, above
both, puts them together: ``tenure serve`` runs :func:`serve`, and an embedding (or a test)
builds the same app with :func:`create_app`.
"""

from __future__ import annotations

from typing import Any

from tenure.core.clock import Clock
from tenure.mcp.entry import endpoint
from tenure.server import run
from tenure.server.http import app
from tenure.settings import Settings


def create_app(settings: Settings | None = None, *, clock: Clock | None = None) -> app.TenureApp:
    """The app ``tenure serve`` runs for ``settings`` (default: from the environment)."""
    settings = settings or Settings.from_env()
    return app.create_app(settings, clock=clock, mounts=[endpoint(settings)])


def serve(settings: Settings, log_level: str = "info", **options: Any) -> None:
    """Run the server with ``/mcp`` until SIGTERM or SIGINT (:func:`tenure.server.run.serve`)."""
    run.serve(settings, log_level, mounts=[endpoint(settings)], **options)
