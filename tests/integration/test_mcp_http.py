"""``/mcp`` on a real ``tenure serve`` (uvicorn, each backend), through the SDK's streamable
HTTP client with bearer tokens: the principal is the token's, two agents race for one item,
and a request without a valid token is refused like the REST API refuses it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import httpx2
import pytest
from _mcp import TOOLS, call, text_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.anyio
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def session(server: LiveServer, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        yield client


async def test_tools_act_as_the_tokens_principal(live_server: LiveServer) -> None:
    token = live_server.token_for("jo/agent-1", parent="root")
    async with session(live_server, token) as jo:
        assert {t.name for t in (await jo.list_tools()).tools} == TOOLS
        me = await call(jo, "whoami")
        assert (me["name"], me["kind"], me["parent"]) == ("jo/agent-1", "agent", "root")
        await call(jo, "create_item", title="t", id="a")
        claim = await call(jo, "claim", item_id="a")
    assert claim["lease"]["holder"] == "jo/agent-1"
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        assert admin.items.get("a").item.assignee == "jo/agent-1"
        assert admin.items.get("a").item.created_by == "jo/agent-1"


async def test_two_agents_race_for_one_item(live_server: LiveServer) -> None:
    tokens = {name: live_server.token_for(name) for name in ("ann/agent-1", "bob/agent-1")}
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")
    results: dict[str, Any] = {}

    async def race(name: str, client: Client, start: anyio.Event) -> None:
        await start.wait()
        results[name] = await client.call_tool("claim", {"item_id": "login", "task": name})

    async with (
        session(live_server, tokens["ann/agent-1"]) as ann,
        session(live_server, tokens["bob/agent-1"]) as bob,
    ):
        clients = {"ann/agent-1": ann, "bob/agent-1": bob}
        start = anyio.Event()
        async with anyio.create_task_group() as tg:
            for name, client in clients.items():
                tg.start_soon(race, name, client, start)
            await anyio.sleep(0.05)
            start.set()
        winners = [n for n, r in results.items() if not r.is_error]
        assert len(winners) == 1, {n: text_of(r) for n, r in results.items()}
        (winner,) = winners
        (loser,) = set(results) - {winner}
        won = results[winner].structured_content
        expires = datetime.fromtimestamp(won["lease"]["expires_at"] / 1000, UTC)
        text = text_of(results[loser])
        assert text.startswith(f"lease_held: items/login held by {winner} (task {winner}) until ")
        assert expires.strftime("%H:%M:%SZ") in text
        done = await call(clients[winner], "complete", item_id="login", epoch=won["epoch"])
        assert done["item"]["status"] == "done"


@pytest.mark.parametrize("header", [None, "Bearer tnr_000000000000_" + "x" * 43, "Basic abc"])
def test_no_valid_token_is_refused(live_server: LiveServer, header: str | None) -> None:
    headers = {**ACCEPT, **({"Authorization": header} if header else {})}
    reply = httpx.post(f"{live_server.url}/mcp", json=INIT, headers=headers, timeout=10)
    assert reply.status_code == 401
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert reply.json()["code"] == "unauthenticated"
    assert reply.headers["www-authenticate"].startswith("Bearer")


def test_a_valid_token_initializes_over_plain_http(live_server: LiveServer) -> None:
    headers = {**ACCEPT, "Authorization": f"Bearer {live_server.token_for('jo')}"}
    reply = httpx.post(f"{live_server.url}/mcp", json=INIT, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["serverInfo"]["name"] == "tenure"
