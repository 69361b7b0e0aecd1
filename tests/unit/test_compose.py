"""The HTTP server knows nothing of MCP: the composition root mounts ``/mcp`` on it."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import Route

from tenure import compose
from tenure.server import create_app
from tenure.settings import Settings


def paths(app: object) -> set[str]:
    return {r.path for r in getattr(app, "routes", []) if isinstance(r, Route)}


def test_the_server_alone_has_no_mcp_and_the_composition_mounts_it(tmp_path: Path) -> None:
    settings = Settings(db=f"sqlite:///{tmp_path / 't.db'}")
    assert "/mcp" not in paths(create_app(settings))
    assert "/mcp" in paths(compose.create_app(settings))
