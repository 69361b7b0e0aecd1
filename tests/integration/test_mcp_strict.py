"""Every MCP tool takes only the arguments its input schema names, of their types and within
their limits: an unknown argument, a wrong type or a value past a limit is refused in the house
form (``invalid_request: field …``, naming the field and what the tool takes) and nothing
changes, not even the caller's lease deadlines. The tools are read from ``list_tools``, so a new
tool is covered as soon as it exists. Over ``/mcp`` on a real server and over ``tenure mcp``
(stdio, direct mode on the same database), on each backend."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from _mcp import call, text_of
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.anyio
TENURE = str(Path(sys.executable).parent / "tenure")
Connect = Callable[[str], AbstractAsyncContextManager[Client]]
#: a value for each required argument (the calls are refused before they are looked at)
FILLERS: dict[str, Any] = {
    "item_id": "x",
    "epoch": 1,
    "key": "k/1",
    "token": 1,
    "title": "t",
    "message": "m",
    "reason": "r",
    "to": "jo/b",
    "to_session": "s-1",
}
PYDANTIC = ("pydantic", "Input should", "Extra inputs", "validation error", "Error executing")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["http", "stdio"])
def connect(request: pytest.FixtureRequest, live_server: LiveServer) -> Connect:
    """``connect(name)``: an MCP connection as ``name``, over ``/mcp`` or over ``tenure mcp``
    (direct mode on the server's database, with the default policy)."""

    @asynccontextmanager
    async def over_http(name: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {live_server.token_for(name)}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{live_server.url}/mcp", http_client=http)) as c,
        ):
            yield c

    @asynccontextmanager
    async def over_stdio(name: str) -> AsyncIterator[Client]:
        live_server.token_for(name)  # the principal exists
        args = ["mcp", "--db", live_server.db, "--principal", name]
        params = StdioServerParameters(command=TENURE, args=args, env={})
        async with Client(params, read_timeout_seconds=30) as c:
            yield c

    return over_http if request.param == "http" else over_stdio


def kinds(prop: dict[str, Any]) -> set[str]:
    arms = [prop, *prop.get("anyOf", [])]
    return {a["type"] for a in arms if isinstance(a.get("type"), str)}


def wrong_type(prop: dict[str, Any]) -> object | None:
    """A value of a type ``prop`` does not take (``None`` if it takes any JSON)."""
    types = kinds(prop)
    if "string" in types and not types & {"integer", "number"}:
        return 12345
    if types & {"integer", "number", "boolean"}:
        return "twelve"
    if types & {"array", "object"}:
        return 7
    return None


def past_limit(prop: dict[str, Any]) -> object | None:
    """A value just past a limit ``prop`` publishes (``None`` if it has none)."""
    for arm in [prop, *prop.get("anyOf", [])]:
        if "maximum" in arm:
            return arm["maximum"] + 1
        if "maxLength" in arm:
            return "x" * (arm["maxLength"] + 1)
        if "maxItems" in arm:
            return ["k/1"] * (arm["maxItems"] + 1)
    return None


def snapshot(server: LiveServer, admin: str) -> tuple[Any, ...]:
    """What a change would show: the last event, the leases (their deadlines and renewals
    too), and the items."""
    with tenure.Client(server.url, token=admin) as client:
        events = client.events(limit=1000)
        leases = [x.to_dict() for x in client.list_leases()]
        items = client.items.get("x").to_dict()
    return events[-1].id if events else 0, leases, items


async def refused_for(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    text = text_of(result)
    assert result.is_error, f"{tool} {args} was accepted: {text[:300]}"
    assert text.startswith("invalid_request: "), f"{tool}: {text}"
    assert not any(word in text for word in PYDANTIC), f"{tool}: {text}"
    assert text.endswith("nothing was done."), f"{tool}: {text}"
    return text


async def test_every_tool_refuses_what_its_schema_does_not_take(
    connect: Connect, live_server: LiveServer
) -> None:
    admin = live_server.admin_token
    with tenure.Client(live_server.url, token=admin) as root:
        root.items.create("fix login", id="x")
    async with connect("jo/agent-1") as jo:
        await call(jo, "claim", item_id="x", ttl_ms=60_000)
        await call(jo, "acquire_lock", key="k/1", ttl_ms=60_000)
        before = snapshot(live_server, admin)
        tools = (await jo.list_tools()).tools
        assert len(tools) >= 19
        limited = 0
        for tool in tools:
            schema = tool.input_schema
            assert schema.get("additionalProperties") is False, tool.name
            props: dict[str, Any] = schema.get("properties", {})
            base = {n: FILLERS[n] for n in schema.get("required", [])}
            text = await refused_for(jo, tool.name, {**base, "zz_unknown": 1})
            assert "unknown field zz_unknown" in text, text
            assert all(name in text for name in props), f"{tool.name} names {list(props)}: {text}"
            typed = next(
                ((n, v) for n, p in props.items() if (v := wrong_type(p)) is not None), None
            )
            if typed is not None:
                text = await refused_for(jo, tool.name, {**base, typed[0]: typed[1]})
                assert f"field {typed[0]}: must be " in text, text
            over = next(
                ((n, v) for n, p in props.items() if (v := past_limit(p)) is not None), None
            )
            if over is not None:
                limited += 1
                text = await refused_for(jo, tool.name, {**base, over[0]: over[1]})
                assert f"field {over[0]}: must " in text, text
        assert snapshot(live_server, admin) == before
    assert limited >= len(tools) - 2  # all but whoami (no arguments) publish a limit


async def test_the_schemas_carry_the_limits(connect: Connect) -> None:
    async with connect("jo/agent-1") as jo:
        tools = {t.name: t.input_schema for t in (await jo.list_tools()).tools}

    def arm(tool: str, name: str) -> dict[str, Any]:
        prop = tools[tool]["properties"][name]
        return next(
            a for a in [prop, *prop.get("anyOf", [])] if a.get("type") not in (None, "null")
        )

    assert (arm("claim", "ttl_ms")["minimum"], arm("claim", "ttl_ms")["maximum"]) == (1000, 600000)
    assert (arm("acquire_lock", "ttl_ms")["minimum"], arm("renew", "ttl_ms")["maximum"]) == (
        1000, 600000,
    )  # fmt: skip
    assert arm("complete", "epoch")["minimum"] == 1 and arm("progress", "epoch")["minimum"] == 1
    assert arm("heartbeat", "keys")["maxItems"] == 1000
    assert arm("claim", "task")["maxLength"] == 1024 and arm("reassign", "reason")["maxLength"]
    assert arm("create_item", "title")["maxLength"] and arm("acquire_lock", "key")["maxLength"]
    assert "x-tenure-limit" not in str(tools)


async def test_a_misnamed_argument_is_refused_and_changes_nothing(
    connect: Connect, live_server: LiveServer
) -> None:
    with tenure.Client(live_server.url, token=live_server.admin_token) as root:
        root.items.create("fix login", id="x")
    async with connect("jo/agent-1") as jo:
        text = await refused_for(jo, "claim", {"item_id": "x", "ttl": 600000})
        assert text.startswith("invalid_request: unknown field ttl (did you mean ttl_ms?). ")
        assert "claim takes item_id (required), ttl_ms, task, takeover, reason." in text
        assert (await call(jo, "show_item", item_id="x"))["item"]["status"] == "open"
        epoch = (await call(jo, "claim", item_id="x"))["epoch"]
        args = {"item_id": "x", "epoch": epoch, "summary": "Implemented X"}
        text = await refused_for(jo, "complete", args)
        assert "unknown field summary" in text and "result" in text
        shown = await call(jo, "show_item", item_id="x")
        assert (shown["item"]["status"], shown["item"]["result"]) == ("in_progress", None)
        text = await refused_for(jo, "claim", {"item_id": "x", "ttl_ms": 900000})
        assert text.startswith("invalid_request: field ttl_ms: must be at most 600000 (got 900000)")
        text = await refused_for(jo, "complete", {"item_id": "x", "epoch": "1"})
        assert 'field epoch: must be an integer (got "1")' in text
        keys = [f"k/{n}" for n in range(1001)]
        text = await refused_for(jo, "heartbeat", {"keys": keys})
        assert "field keys: must have at most 1000 items (got 1001)" in text
        result = await jo.call_tool("finish", {"item_id": "x"})
        assert result.is_error and text_of(result).startswith("not_found: no tool 'finish'. ")
        assert "complete" in text_of(result)
        done = await call(jo, "complete", item_id="x", epoch=epoch, result="Implemented X")
        assert done["item"]["result"] == "Implemented X"


async def test_a_read_only_tool_changes_nothing(connect: Connect, live_server: LiveServer) -> None:
    """``readOnlyHint`` is honest: a read-only tool does not even renew the caller's leases."""
    admin = live_server.admin_token
    with tenure.Client(live_server.url, token=admin) as root:
        root.items.create("fix login", id="x")
    async with connect("jo/agent-1") as jo:
        await call(jo, "claim", item_id="x", ttl_ms=60_000)
        await call(jo, "acquire_lock", key="k/1", ttl_ms=60_000)
        before = snapshot(live_server, admin)
        tools = [t for t in (await jo.list_tools()).tools if t.annotations is not None]
        readers = [t for t in tools if t.annotations and t.annotations.read_only_hint]
        assert {"whoami", "ready", "queue", "show_item", "list_leases"} <= {t.name for t in readers}
        for tool in readers:
            args = {n: FILLERS[n] for n in tool.input_schema.get("required", [])}
            result = await jo.call_tool(tool.name, args)
            assert not result.is_error, f"{tool.name}: {text_of(result)}"
        assert snapshot(live_server, admin) == before
