"""tenure's MCP server (SPEC §7): the work-queue and lease verbs as MCP tools for agents.

- :mod:`.tools`: the instructions, :func:`build_server` and the tools that look at the queue;
  :mod:`.tools_claims` (an agent's item verbs), :mod:`.tools_locks` (locks, leases, heartbeat)
  and :mod:`.tools_queue` (finding and editing items) the others; :mod:`.tooling` what they
  share (how a tool acts, its hints).
- :mod:`.server`: the SDK's server with strict arguments (unknown ones refused, the REST limits
  and the policy's enforced, refusals in the house form).
- :mod:`.inputs`: the tools' argument types, the REST API's own.
- :mod:`.backend`: the one interface the tools call: a :class:`tenure.Client`, over HTTP
  (under stdio) or in-process to the server's own app (on ``/mcp``, :mod:`.loopback`).
- :mod:`.models`: the pydantic models the tools return (``structuredContent``).
- :mod:`.failures`: refusals as tool errors that name the code and the facts.
- :mod:`.claim_advice`: what to do about each lapsed, revoked or stalled claim (``briefing``,
  ``queue``).
- :mod:`.http`: ``/mcp`` on ``tenure serve`` (streamable HTTP, bearer tokens).

``tenure mcp`` (:mod:`tenure.cli.mcp`) serves the tools over stdio. docs/mcp.md is the guide.
"""

from tenure.mcp.backend import Backend, ClientBackend
from tenure.mcp.tools import build_server

__all__ = ["Backend", "ClientBackend", "build_server"]
