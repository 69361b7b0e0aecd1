"""``/mcp`` on a real ``tenure serve`` (uvicorn, each backend), through the SDK's streamable
HTTP client with bearer tokens: the principal is the token's, each connection is a session of
its own (named by the ``Mcp-Session-Id`` the handshake hands out), two agents race for one item,
and a request without a valid token is refused like the REST API refuses it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import httpx2
import pytest
from _mcp import TOOLS, call, refused, text_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

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
WHOAMI = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "whoami", "arguments": {}},
}


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
        held = f"held by {winner} (session {won['lease']['session']}, task {winner}) until "
        assert text.startswith(f"lease_held: items/login {held}")
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
    assert reply.headers["mcp-session-id"].startswith("mcp-")


async def test_each_connection_is_a_session(live_server: LiveServer) -> None:
    """Two connections with one token: each is a session, they exclude each other, and the
    calls of one renew only its own leases (B's claim lapses while A keeps working)."""
    token = live_server.token_for("jo/agent-1")
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        for item_id in ("a", "b"):
            admin.items.create(item_id, id=item_id)
    async with (
        session(live_server, token) as a,
        session(live_server, token) as b,
        session(live_server, live_server.token_for("kim/agent-1")) as kim,
    ):
        assert a.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS  # a connection, not requests
        sa, sb = [(await call(c, "whoami"))["session"] for c in (a, b)]
        assert sa.startswith("mcp-") and sb.startswith("mcp-") and sa != sb
        claim = await call(a, "claim", item_id="a", ttl_ms=2000)
        assert (claim["lease"]["holder"], claim["lease"]["session"]) == ("jo/agent-1", sa)
        text = await refused(b, "claim", "lease_held", item_id="a")
        assert text.startswith(f"lease_held: items/a held by jo/agent-1 (session {sa}) until ")
        assert (await call(b, "claim", item_id="b", ttl_ms=1000))["lease"]["session"] == sb

        started = time.monotonic()  # A works for 3 s, past its own 2 s ttl and B's 1 s
        while time.monotonic() - started < 3:  # a write call renews (briefing: a cursor)
            await call(a, "briefing")
            await anyio.sleep(0.2)
        assert (await call(a, "show_item", item_id="b"))["lease_state"] == "lapsed"
        mine = await call(a, "show_item", item_id="a")
        assert mine["lease_state"] == "live" and mine["lease"]["renewals"] >= 5

        text = await refused(kim, "complete", "not_holder", item_id="a", epoch=claim["epoch"])
        assert text.startswith(f"not_holder: items/a held by jo/agent-1 (session {sa}) until ")
        done = await call(a, "complete", item_id="a", epoch=claim["epoch"])
        assert done["item"]["status"] == "done"


def test_the_handshake_hands_out_the_session(live_server: LiveServer) -> None:
    auth = {**ACCEPT, "Authorization": f"Bearer {live_server.token_for('jo')}"}
    with httpx.Client(base_url=live_server.url, headers=auth, timeout=10) as http:
        given = [http.post("/mcp", json=INIT).headers["mcp-session-id"] for _ in range(2)]
        assert all(s.startswith("mcp-") for s in given) and given[0] != given[1]
        named = http.post("/mcp", json=WHOAMI, headers={"Mcp-Session-Id": given[0]})
        nonce = given[0].split("-")[1]  # mcp-<nonce>-<mac>: the session is mcp-http:<nonce>
        assert named.json()["result"]["structuredContent"]["session"] == f"mcp-http:{nonce}"
        assert "mcp-session-id" not in named.headers  # only the handshake hands one out
        bare = http.post("/mcp", json=WHOAMI)  # no handshake, no header: the default session
        assert bare.json()["result"]["structuredContent"]["session"] == ""

        bad = http.post("/mcp", json=WHOAMI, headers={"Mcp-Session-Id": "x" * 129})
        assert (bad.status_code, bad.json()["code"]) == (404, "not_found")
        for method in ("GET", "DELETE"):  # no server-to-client stream; nothing to end
            reply = http.request(method, "/mcp", headers={"Mcp-Session-Id": given[0]})
            assert (reply.status_code, reply.headers["allow"]) == (405, "POST")


def test_a_session_id_is_the_servers_own_and_its_principals_only(
    live_server: LiveServer,
) -> None:
    """An ``Mcp-Session-Id`` made up by a client, or issued to another principal, is refused
    (404: the client starts over with initialize) and nothing runs; a connection's session is
    out of reach of REST calls, which may not name it."""
    jo_token, kim_token = live_server.token_for("jo"), live_server.token_for("kim")
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("a", id="a")
    claim = {**WHOAMI, "params": {"name": "claim", "arguments": {"item_id": "a"}}}
    with (
        httpx.Client(base_url=live_server.url, timeout=10) as http,
        tenure.Client(live_server.url, token=jo_token) as jo_rest,
    ):
        jo = {**ACCEPT, "Authorization": f"Bearer {jo_token}"}
        kim = {**ACCEPT, "Authorization": f"Bearer {kim_token}"}
        jos = http.post("/mcp", json=INIT, headers=jo).headers["mcp-session-id"]
        nonce, mac = jos.split("-")[1:]
        made_up = [
            "mcp-0123456789abcdef",  # the form of the ids once handed out, unsigned
            f"mcp-{nonce}-{'0' * 32}",
            f"mcp-{'1' * 24}-{mac}",
            "jo-s-own-name",
        ]
        for given, who in [(jos, kim), *[(x, jo) for x in made_up]]:
            reply = http.post("/mcp", json=claim, headers={**who, "Mcp-Session-Id": given})
            assert (reply.status_code, reply.json()["code"]) == (404, "not_found"), given
            assert "initialize" in reply.json()["detail"]
        assert admin_view(live_server, "a") is None  # nobody claimed it
        ok = http.post("/mcp", json=claim, headers={**jo, "Mcp-Session-Id": jos})
        lease = ok.json()["result"]["structuredContent"]["lease"]
        assert (lease["holder"], lease["session"]) == ("jo", f"mcp-http:{nonce}")
        for body in (
            {"key": "k", "session": f"mcp-http:{nonce}"},
            {"key": "k", "session": "mcp-http:"},
        ):
            refused_rest = http.post(
                "/v1/leases/acquire", json=body, headers={"Authorization": f"Bearer {jo_token}"}
            )
            assert refused_rest.status_code == 422
            assert refused_rest.json()["field"] == "session"
        renew = http.post(
            "/v1/leases/renew-all",
            json={"session": f"mcp-http:{nonce}"},
            headers={"Authorization": f"Bearer {jo_token}"},
        )
        assert (renew.status_code, renew.json()["field"]) == (422, "session")
        assert jo_rest.list_leases(prefix="k") == []  # no REST acquisition went through
    with pytest.raises(tenure.InvalidRequest):
        tenure.Client(live_server.url, token=jo_token, session=f"mcp-http:{nonce}")


def admin_view(server: LiveServer, item_id: str) -> str | None:
    with tenure.Client(server.url, token=server.admin_token) as admin:
        return admin.items.get(item_id).item.assignee


def test_a_revision_without_a_handshake_is_asked_for_one(live_server: LiveServer) -> None:
    """2026-07-28 has no connection to be a session: the client is told the revisions served
    (the SDKs then fall back to the handshake, as the tests above do)."""
    headers = {
        **ACCEPT,
        "Authorization": f"Bearer {live_server.token_for('jo')}",
        "MCP-Protocol-Version": "2026-07-28",
    }
    probe = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}
    reply = httpx.post(f"{live_server.url}/mcp", json=probe, headers=headers, timeout=10)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (reply.json()["id"], error["code"]) == (7, -32022)
    assert error["data"] == {
        "supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": "2026-07-28",
    }  # fmt: skip


async def test_reassign_revoked_advice_and_follow_ups(live_server: LiveServer) -> None:
    """An agent's claim is force-released: it is told not to claim it again; its dispatcher
    reassigns it to another agent, which completes it with follow-ups."""
    jo_token = live_server.token_for("jo", kind="human")
    tokens = {name: live_server.token_for(name, parent="jo") for name in ("jo/a1", "jo/a2")}
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")
    async with (
        session(live_server, jo_token) as jo,
        session(live_server, tokens["jo/a1"]) as a1,
        session(live_server, tokens["jo/a2"]) as a2,
    ):
        old = (await call(a1, "claim", item_id="login"))["epoch"]
        ended = await call(jo, "force_release", key="items/login", reason="wrong approach")
        assert ended["item"]["revoked"] is True
        text = await refused(a1, "claim", "assigned_to_other", item_id="login")
        assert "its claim revoked" in text and "Do not claim it again" in text
        brief = await call(a1, "briefing")
        assert [v["lease_state"] for v in brief["lapsed"]] == ["revoked"]
        assert "Do not claim it again" in brief["advice"][0]

        moved = await call(jo, "reassign", item_id="login", to="jo/a2", reason="a fresh start")
        assert moved["item"]["assignee"] == "jo/a2"
        await refused(a1, "progress", "stale_token", item_id="login", epoch=old, message="x")
        epoch = (await call(a2, "claim", item_id="login"))["epoch"]
        done = await call(a2, "complete", item_id="login", epoch=epoch,
                          follow_ups=[{"title": "add a test", "id": "login-test"}])  # fmt: skip
        assert [(f["id"], f["parent"]) for f in done["follow_ups"]] == [("login-test", "login")]
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        reasons = [t.reason for t in admin.items.get("login").transfers]
        assert reasons == ["claimed", "force_released", "reassigned", "claimed", "completed"]
