"""Helpers of the MCP tests: calling a tool and reading its result or its refusal, with any MCP
client session of the SDK (in-process, streamable HTTP or stdio)."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, TextContent

TOOLS = {
    "whoami",
    "briefing",
    "ready",
    "queue",
    "show_item",
    "create_item",
    "claim",
    "renew",
    "extend",
    "release",
    "progress",
    "complete",
    "acquire_lock",
    "renew_lock",
    "release_lock",
    "list_leases",
    "force_release",
    "heartbeat",
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
