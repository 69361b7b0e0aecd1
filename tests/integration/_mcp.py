"""Helpers of the MCP tests: calling a tool and reading its result or its refusal, with any MCP
client session of the SDK (in-process, streamable HTTP or stdio), and :func:`in_process` MCP
connections on a service (the same client as direct mode: the server's own app on the
service, in process)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, TextContent

import tenure
from tenure.client.direct import DirectBackend, DirectTransport
from tenure.mcp import Backend, build_server
from tenure.service.principals import Principals

Agent = Callable[..., AbstractAsyncContextManager[Client]]

TOOLS = {
    "whoami",
    "briefing",
    "ready",
    "queue",
    "show_item",
    "create_item",
    "claim",
    "reassign",
    "renew",
    "extend",
    "release",
    "progress",
    "complete",
    "acquire_lock",
    "renew_lock",
    "release_lock",
    "transfer_lock",
    "list_leases",
    "force_release",
    "heartbeat",
    "list_items",
    "update_item",
    "cancel_item",
    "reopen_item",
}


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """The structured result of a call that must succeed; its text is the same JSON."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    assert isinstance(result.structured_content, dict), f"{tool} has no structuredContent"
    assert json.loads(text_of(result)) == result.structured_content
    return result.structured_content


async def refused(client: Client, tool: str, code: str, **args: Any) -> str:
    """The error text of a call that must fail with ``code``: ``code: facts. What to do.``"""
    result = await client.call_tool(tool, args)
    text = text_of(result)
    assert result.is_error, f"{tool} succeeded: {text}"
    assert text.startswith(f"{code}: "), text
    assert "Error executing tool" not in text
    assert result.structured_content is None
    return text


def in_process(service: tenure.Service) -> Agent:
    """``async with agent("jo/agent-1", roles=(...)) as client``: an in-process MCP connection
    whose tools act as that principal (created in the database, so its roles apply), in a
    session of its own (``mcp-1``, ``mcp-2``… unless ``session`` names one), as on ``/mcp``:
    through the tools' one backend, a client, here running the verbs on ``service``."""
    numbers = itertools.count(1)

    @asynccontextmanager
    async def connect(
        name: str,
        kind: str = "agent",
        roles: tuple[str, ...] = (),
        parent: str | None = None,
        session: str | None = None,
    ) -> AsyncIterator[Client]:
        Principals(service.store).bootstrap(name, kind, roles, parent)
        sid = f"mcp-{next(numbers)}" if session is None else session
        transport = DirectTransport(DirectBackend.on(service, name))
        with tenure.Client(transport=transport, session=sid) as direct:
            backend = Backend(direct)
            server = build_server(lambda ctx: backend, service.policy)
            async with Client(server) as client:
                yield client

    return connect
