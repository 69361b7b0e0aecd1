"""The MCP tools as an agent sees them: only the tool list, the descriptions and the replies,
through the SDK's client over ``/mcp`` on a real server and over ``tenure mcp`` (stdio), with a
supervisor and two agents.

- The dead agent: agent1's claim lapses (it stops calling); agent2 finds the work through
  ``ready`` and takes it over with a reason; the supervisor sees it in its ``briefing``.
- The queue tools (``list_items``, ``update_item``, ``cancel_item``) work and refuse bad input
  in the house form, changing nothing.
- Lists stay small: a ``briefing`` over ten items of 60 KB each is under 20 KB of text.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from _mcp import call, refused, text_of
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TENURE = str(Path(sys.executable).parent / "tenure")
LAPSE_S = 1.1  # a claim of ttl_ms=1000 (the policy's min_ttl) has lapsed by then
Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["http", "stdio"])
def connect(request: pytest.FixtureRequest, live_server: LiveServer) -> Connect:
    """``async with connect("agent1", roles=...) as client``: an MCP connection as that
    principal (made on first use), over ``/mcp`` or a ``tenure mcp`` process."""
    tokens: dict[str, str] = {}

    @asynccontextmanager
    async def open_(
        name: str, kind: str = "agent", roles: tuple[str, ...] = ()
    ) -> AsyncIterator[Client]:
        if name not in tokens:
            tokens[name] = live_server.token_for(name, kind, roles)
        if request.param == "http":
            headers = {"Authorization": f"Bearer {tokens[name]}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(f"{live_server.url}/mcp", http_client=http)) as c,
            ):
                yield c
        else:
            env = {"TENURE_URL": live_server.url, "TENURE_TOKEN": tokens[name]}
            params = StdioServerParameters(command=TENURE, args=["mcp"], env=env)
            async with Client(params, read_timeout_seconds=30) as c:
                yield c

    return open_


@pytest.fixture
def admin(live_server: LiveServer) -> Any:
    with tenure.Client(live_server.url, token=live_server.admin_token) as client:
        yield client


async def test_a_dead_agents_work_is_found_taken_over_and_seen_by_the_supervisor(
    connect: Connect, admin: tenure.Client
) -> None:
    admin.items.create("fix the login page", id="fix-login", priority=1)
    admin.items.create("write the release notes", id="notes")
    async with connect("boss", kind="human", roles=("supervisor",)) as boss:
        assert "supervisor" in (await call(boss, "whoami"))["roles"]
    async with connect("agent1") as agent1:
        first = await call(agent1, "claim", item_id="fix-login", ttl_ms=1000)
        await call(agent1, "progress", item_id="fix-login", epoch=first["epoch"], message="half")
    time.sleep(LAPSE_S)  # agent1 is gone: nothing renews its claim

    async with connect("boss") as boss:
        brief = await call(boss, "briefing")
        lapsed = [(x["item"]["id"], x["lease_state"]) for x in brief["lapsed"]]
        assert lapsed == [("fix-login", "lapsed")]
        assert any(line.startswith("fix-login lapsed") for line in brief["advice"])
    async with connect("agent2") as agent2:
        ready = await call(agent2, "ready")
        assert [i["id"] for i in ready["items"]] == ["notes"]
        (dead,) = ready["lapsed"]
        assert (dead["item"]["id"], dead["holder"]) == ("fix-login", "agent1")
        assert dead["lapsed_at"] < time.time() * 1000
        assert "takeover=true and a reason" in dead["advice"]
        brief = await call(agent2, "briefing")
        assert [x["item"]["id"] for x in brief["ready_lapsed"]] == ["fix-login"]
        live = await call(agent2, "list_leases", prefix="items/")
        assert live["leases"] == []
        listed = await call(agent2, "list_leases", prefix="items/", include_lapsed=True)
        assert [(x["key"], x["holder"], x["state"]) for x in listed["leases"]] == [
            ("items/fix-login", "agent1", "expired")
        ]

        await refused(agent2, "claim", "assigned_to_other", item_id="fix-login")
        taken = await call(
            agent2, "claim", item_id="fix-login", takeover=True, reason="agent1 stopped"
        )
        assert taken["epoch"] > first["epoch"]
        shown = await call(agent2, "show_item", item_id="fix-login")
        last = shown["transfers"][-1]
        assert (last["reason"], last["note"], last["to"]) == (
            "taken_over",
            "agent1 stopped",
            "agent2",
        )
        assert (await call(agent2, "ready"))["lapsed"] == []
        await call(agent2, "complete", item_id="fix-login", epoch=taken["epoch"], result="ok")
    async with connect("boss") as boss:
        assert (await call(boss, "briefing"))["lapsed"] == []


async def test_the_queue_tools_work_and_refuse_bad_input(
    connect: Connect, admin: tenure.Client
) -> None:
    admin.items.create("fix login", id="login", labels=["auth"])
    admin.items.create("write docs", id="docs", labels=["docs"])
    async with connect("agent1") as agent1:
        listed = await call(agent1, "list_items", label="auth")
        assert [i["id"] for i in listed["items"]] == ["login"]
        assert "body" not in listed["items"][0]
        edited = await call(agent1, "update_item", item_id="docs", priority=0, labels=["x"])
        assert (edited["item"]["priority"], edited["item"]["labels"]) == (0, ["x"])
        claim = await call(agent1, "claim", item_id="login")
        mine = await call(agent1, "list_items", assignee="agent1", status="in_progress")
        assert [i["id"] for i in mine["items"]] == ["login"]
        assert claim["epoch"] >= 1
    before = (admin.items.get("login"), admin.items.get("docs"))
    async with connect("agent2") as agent2:
        for tool, args in (
            ("list_items", {"state": "open"}),  # an unknown argument
            ("list_items", {"status": "nope"}),
            ("list_items", {"limit": 0}),
            ("list_items", {"limit": "5"}),  # a wrong type
            ("update_item", {"item_id": "docs"}),  # nothing to change
            ("update_item", {"item_id": "docs", "priority": 1001}),
            ("update_item", {"item_id": "docs", "labels": "x"}),
            ("update_item", {"item_id": "docs", "assignee": "agent2"}),
            ("update_item", {"item_id": "docs", "status": "done"}),
            ("cancel_item", {"item_id": "docs"}),  # no reason
            ("cancel_item", {"item_id": "docs", "reason": "x", "force": True}),
        ):
            text = await refused(agent2, tool, "invalid_request", **args)
            assert "Error executing tool" not in text and "pydantic" not in text
        text = await refused(agent2, "update_item", "not_holder", item_id="login", title="mine")
        assert "agent1" in text
        await refused(agent2, "cancel_item", "forbidden", item_id="login", reason="mine now")
        await refused(agent2, "update_item", "not_found", item_id="nope", title="x")
        assert (admin.items.get("login"), admin.items.get("docs")) == before  # nothing changed
    async with connect("agent1") as agent1:
        cancelled = await call(agent1, "cancel_item", item_id="login", reason="not needed")
        assert (cancelled["item"]["status"], cancelled["item"]["assignee"]) == ("cancelled", None)
        await refused(agent1, "cancel_item", "conflict", item_id="login", reason="again")
        gone = await call(agent1, "list_items", status="cancelled")
        assert [i["id"] for i in gone["items"]] == ["login"]


async def test_lists_carry_summaries_not_bodies(connect: Connect, admin: tenure.Client) -> None:
    for n in range(10):
        admin.items.create(f"task {n}", body="x" * 60_000, id=f"big-{n}")
    async with connect("agent1") as agent1:
        for n in range(3):
            await call(agent1, "claim", item_id=f"big-{n}")
        sizes: dict[str, int] = {}
        for tool, args in (
            ("briefing", {"ready": 10}),
            ("ready", {"limit": 10}),
            ("queue", {}),
            ("list_items", {"limit": 10}),
        ):
            result = await agent1.call_tool(tool, args)
            assert not result.is_error, text_of(result)
            sizes[tool] = len(text_of(result))
        assert all(size < 20_000 for size in sizes.values()), sizes
        brief = await call(agent1, "briefing", ready=10)
        assert len(brief["carrying"]) == 3 and len(brief["ready"]) == 7
        assert brief["ready"][0]["body_chars"] == 60_000
        shown = await call(agent1, "show_item", item_id="big-9")
        assert shown["item"]["body"] == "x" * 60_000  # the body is one show_item away
