"""tenure's MCP server (SPEC §7): the work-queue and lease verbs as MCP tools for agents.

- :mod:`.tools`: the tools, their descriptions, and :func:`build_server`.
- :mod:`.backend`: the one interface the tools call: the service as an authenticated principal
  (on the server) or a :class:`tenure.Client` (under stdio).
- :mod:`.models`: the pydantic models the tools return (``structuredContent``).
- :mod:`.failures`: refusals as tool errors that name the code and the facts.
- :mod:`.advice`: what to do about each lapsed, revoked or stalled claim (``briefing``,
  ``queue``).
- :mod:`.http`: ``/mcp`` on ``tenure serve`` (streamable HTTP, bearer tokens).

``tenure mcp`` (:mod:`tenure.cli.mcp`) serves the tools over stdio. docs/mcp.md is the guide.
"""

from tenure.mcp.backend import Backend, ClientBackend, ServiceBackend
from tenure.mcp.tools import build_server

__all__ = ["Backend", "ClientBackend", "ServiceBackend", "build_server"]
