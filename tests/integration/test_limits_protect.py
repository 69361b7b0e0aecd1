"""Limits that protect without locking anyone out, on a real server (each backend).

- Failed authentications are counted per source: the connection's peer, unless it is a
  configured proxy (``TENURE_FORWARDED_ALLOW_IPS``, default none): a client on the machine
  cannot escape its budget by rotating ``X-Forwarded-For``.
- A valid token is never answered ``429`` because others failed from its address, not even one
  the server has not seen yet (a server just restarted), on the hot path, FastAPI's routes
  and ``/mcp``; ``/mcp`` is under the same budget.
- A request's headers must arrive within ``TENURE_HEADER_TIMEOUT_MS`` (else the connection is
  closed), its body within ``TENURE_BODY_TIMEOUT_MS`` of them (else ``408`` and closed).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from conftest import LiveServer
from tenure.settings import AuthSettings, HttpSettings

BURST = 3
#: a budget of BURST failures, earned back at one a minute: nothing is earned back during a test
AUTH = AuthSettings(failures_per_s=1 / 60, failures_burst=BURST)
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
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


def bad_token(i: int) -> str:
    return f"tnr_{i:012x}_" + "B" * 43


def server(store_url: str, access_log: bool = False, **http: object) -> LiveServer:
    live = LiveServer(store_url, access_log=access_log)
    settings = replace(live.settings, auth=AUTH, http=replace(HttpSettings(), **http))
    live.settings = settings
    return live


@pytest.fixture
def limited(store_url: str) -> Iterator[LiveServer]:
    live = server(store_url).start()
    try:
        yield live
    finally:
        live.stop()


def spend_budget(url: str, route: str = "/v1/me", **headers: str) -> None:
    """The address's whole budget of failures, spent on made-up tokens."""
    with httpx.Client(base_url=url, timeout=10) as http:
        for i in range(BURST):
            got = http.get(route, headers={"Authorization": f"Bearer {bad_token(i)}", **headers})
            assert got.status_code == 401, got.text


def test_rotating_x_forwarded_for_does_not_escape_the_limit(limited: LiveServer) -> None:
    with httpx.Client(base_url=limited.url, timeout=10) as http:
        codes = []
        for i in range(BURST + 2):  # each "from" another address, as a local process claims
            forged = {"X-Forwarded-For": f"10.1.{i}.1", "Authorization": f"Bearer {bad_token(i)}"}
            codes.append(http.get("/v1/me", headers=forged).status_code)
    assert codes == [401] * BURST + [429] * 2


def test_a_flood_of_bad_tokens_leaves_valid_tokens_answered(limited: LiveServer) -> None:
    """20 clients flood made-up tokens from the holder's address; tokens the server has never
    seen (as after a restart) still work, on the hot path and on FastAPI's routes."""
    tokens = [limited.token_for(f"agent-{i}") for i in range(3)]

    async def flood(http: httpx.AsyncClient, n: int) -> list[int]:
        codes = []
        for i in range(3):
            bad = {"Authorization": f"Bearer {bad_token(1000 * n + i)}"}
            codes.append((await http.get("/v1/me", headers=bad)).status_code)
        return codes

    async def holder(http: httpx.AsyncClient, token: str, i: int) -> list[int]:
        auth = {"Authorization": f"Bearer {token}"}
        body = {"key": f"files/{i}", "ttl_ms": 30_000}
        acquired = await http.post("/v1/leases/acquire", json=body, headers=auth)
        me = await http.get("/v1/me", headers=auth)
        return [acquired.status_code, me.status_code]

    async def run() -> tuple[list[list[int]], list[list[int]]]:
        async with httpx.AsyncClient(base_url=limited.url, timeout=30) as http:
            flooding = [flood(http, n) for n in range(20)]
            holding = [holder(http, token, i) for i, token in enumerate(tokens)]
            got = await asyncio.gather(*flooding, *holding)
        return got[:20], got[20:]

    spend_budget(limited.url)  # the address is past its budget before the holders come
    floods, holders = asyncio.run(run())
    assert {code for codes in floods for code in codes} == {429}  # the flood is limited
    assert holders == [[200, 200]] * len(tokens)


def test_mcp_is_under_the_same_limit_and_a_valid_token_still_works(limited: LiveServer) -> None:
    spend_budget(limited.url)  # failures on the REST API count for /mcp too
    with httpx.Client(base_url=limited.url, timeout=10) as http:
        bad = {**MCP_HEADERS, "Authorization": f"Bearer {bad_token(99)}"}
        refused = http.post("/mcp", json=INIT, headers=bad)
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "rate_limited"
        assert int(refused.headers["retry-after"]) >= 1
        good = {**MCP_HEADERS, "Authorization": f"Bearer {limited.token_for('jo')}"}
        answered = http.post("/mcp", json=INIT, headers=good)
        assert answered.status_code == 200, answered.text


def test_mcp_failures_are_counted(limited: LiveServer) -> None:
    with httpx.Client(base_url=limited.url, timeout=10) as http:
        codes = []
        for i in range(BURST + 1):
            bad = {**MCP_HEADERS, "Authorization": f"Bearer {bad_token(i)}"}
            codes.append(http.post("/mcp", json=INIT, headers=bad).status_code)
    assert codes == [401] * BURST + [429]


def test_a_configured_proxy_names_the_client_on_every_path(store_url: str) -> None:
    live = server(store_url, forwarded_allow_ips="127.0.0.1").start()
    try:
        spend_budget(live.url, **{"X-Forwarded-For": "10.0.0.1"})
        body = {"key": "files/a", "ttl_ms": 1000}
        with httpx.Client(base_url=live.url, timeout=10) as http:
            for route in ("/v1/me", "/v1/leases/acquire"):  # FastAPI's route, the hot path
                codes = []
                for client in ("10.0.0.1", "10.0.0.2"):
                    headers = {"X-Forwarded-For": client, "Authorization": f"Bearer {bad_token(7)}"}
                    method = "GET" if route == "/v1/me" else "POST"
                    reply = http.request(method, route, headers=headers, json=body)
                    codes.append(reply.status_code)
                assert codes == [429, 401], route
    finally:
        live.stop()


@pytest.fixture(params=[False, True], ids=["hot", "access-log"])
def timed(store_url: str, request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """A server with 1 s timeouts; with ``--access-log`` too (no hot path: uvicorn's own
    protocol with the timeouts)."""
    timeouts = {"header_timeout_ms": 1000, "body_timeout_ms": 1000}
    live = server(store_url, access_log=request.param, **timeouts).start()
    try:
        yield live
    finally:
        live.stop()


def connect(live: LiveServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", live.port), timeout=10)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (the socket's timeout: 10 s,
    ten times the server's)."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /v1/leases/acquire HTTP/1.1\r\nHost: x\r\nContent-Le"],
    ids=["nothing", "half-headers"],
)
def test_a_request_without_its_headers_is_closed(timed: LiveServer, sent: bytes) -> None:
    with connect(timed) as sock:
        sock.sendall(sent)
        assert read_all(sock) == b""  # closed, unanswered (not the socket's 10 s timeout)


@pytest.mark.parametrize("path", ["/v1/leases/acquire", "/v1/leases/renew-all"])
def test_a_half_sent_body_is_408_and_closed(timed: LiveServer, path: str) -> None:
    token = timed.admin_token
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    with connect(timed) as sock:
        sock.sendall(head.encode() + b'{"key": "files/a", ')
        reply = read_all(sock)
    assert reply.startswith(b"HTTP/1.1 408 "), reply
    assert b"connection: close" in reply.lower()
    assert b'"code":"request_timeout"' in reply
    with httpx.Client(base_url=timed.url, timeout=10) as http:  # nothing was done
        leases = http.get("/v1/leases", headers={"Authorization": f"Bearer {token}"})
        assert leases.json()["leases"] == []


def test_a_long_poll_outlasts_the_timeouts(timed: LiveServer) -> None:
    """Once its body is in, a request is not timed: a long-poll longer than both timeouts
    gets its answer, and so does the next request of the connection."""
    holder = {"Authorization": f"Bearer {timed.admin_token}"}
    waiter = {"Authorization": f"Bearer {timed.token_for('other')}"}
    body = {"key": "files/a", "ttl_ms": 30_000}
    with httpx.Client(base_url=timed.url, timeout=10) as http:
        assert http.post("/v1/leases/acquire", json=body, headers=holder).status_code == 200
        waited = http.post("/v1/leases/acquire", json={**body, "wait_ms": 1500}, headers=waiter)
        assert waited.status_code == 409 and waited.json()["code"] == "lease_held"
        assert http.get("/v1/me", headers=waiter).status_code == 200
