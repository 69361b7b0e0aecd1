"""The hot calls served by uvicorn's protocol itself (``tenure.server.protocol``), over sockets.

``tenure serve`` (and ``live_server``) answers an ordinary acquire, renew or release without an
ASGI task; everything else goes through the app. These tests speak raw HTTP/1.1 to a real
server to check what a client sees: the same replies as the ASGI path (``--access-log``), in
order on a pipelined connection, ``connection: close`` honoured, the app's own answers for what
the protocol hands over (an unknown token, ``Expect: 100-continue``, a long-poll, a crash).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import LiveServer
from tenure.server.http.app import TenureApp
from tenure.server.protocol import HotProtocol


def request(path: str, body: dict[str, Any] | bytes, token: str, *extra: str) -> bytes:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        f"Authorization: Bearer {token}",
        "Content-Type: application/json",
        f"Content-Length: {len(raw)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + raw


class Conn:
    """One keep-alive connection that reads whole responses (content-length framed)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def response(self) -> tuple[int, dict[str, str], Any]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(headers["content-length"])
        while len(self.buf) < length:
            self._more()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, json.loads(body) if body else None

    def closed(self) -> bool:
        """The server closed the connection (after what was read)."""
        return self.buf == b"" and self.sock.recv(1) == b""

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buf += chunk

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def conn(live_server: LiveServer) -> Iterator[Conn]:
    c = Conn(live_server.port)
    yield c
    c.close()


def test_the_server_runs_the_hot_protocol(live_server: LiveServer) -> None:
    server = live_server._server
    assert server is not None
    assert server.config.http_protocol_class.__name__ == "TenureProtocol"
    asgi = LiveServer(live_server.db, access_log=True).start()  # --access-log: no hot path
    try:
        assert asgi._server is not None
        used = asgi._server.config.http_protocol_class
        assert used.__name__ == "TenureTimedProtocol"  # uvicorn's, with read timeouts only
        assert not issubclass(used, HotProtocol)
    finally:
        asgi.stop()


def test_a_cycle_on_one_connection(live_server: LiveServer, conn: Conn) -> None:
    token = live_server.token_for("jo")
    conn.send(request("/v1/leases/acquire", {"key": "k", "ttl_ms": 5000}, token))
    status, headers, body = conn.response()
    assert status == 200 and headers["content-type"] == "application/json"
    assert "date" in headers and body["lease"]["holder"] == "jo"
    fence = body["lease"]["token"]
    conn.send(request("/v1/leases/renew", {"key": "k", "token": fence}, token))
    status, _, body = conn.response()
    assert status == 200 and body["lease"]["token"] == fence
    conn.send(request("/v1/leases/release", {"key": "k", "token": fence}, token))
    status, _, body = conn.response()
    assert status == 200 and body["released"] is True
    conn.send(request("/v1/leases/renew", {"key": "k", "token": fence}, token))
    status, headers, body = conn.response()
    assert status == 409 and headers["content-type"] == "application/problem+json"
    assert body["code"] == "lease_lost"


def test_the_replies_are_the_asgi_paths_replies(store_url: str, tmp_path: Any) -> None:
    """The same calls against ``--access-log`` (ASGI) and the default: the same statuses, types
    and bodies (leases differ only in their instants and ids)."""
    seen = []
    for access_log in (False, True):
        server = LiveServer(store_url, access_log=access_log).start()
        try:
            seen.append(_script(server))
        finally:
            server.stop()
    assert seen[0] == seen[1]
    assert [status for status, _, _ in seen[0]] == [200, 409, 200, 403, 200, 200, 422]


def _script(server: LiveServer) -> list[tuple[int, str, Any]]:
    jo, al = server.token_for(f"jo{server.access_log}"), server.token_for(f"al{server.access_log}")
    key = f"cmp-{server.access_log}"
    out = []
    with server.http(jo) as a, server.http(al) as b:
        first = {"key": key, "ttl_ms": 4000, "task": "t", "meta": {"m": 1}}
        r = a.post("/v1/leases/acquire", json=first)
        out.append((r.status_code, r.headers["content-type"], _shape(r.json(), server)))
        fence = r.json()["lease"]["token"]
        calls = [
            (b, "acquire", {"key": key}),
            (a, "renew", {"key": key, "token": fence, "ttl_ms": 3000}),
            (b, "release", {"key": key}),
            (a, "release", {"key": key}),
            (a, "release", {"key": key}),
            (a, "acquire", {"key": key, "ttl_ms": 0}),  # out of bounds: FastAPI's 422
        ]
        for client, verb, body in calls:
            r = client.post(f"/v1/leases/{verb}", json=body)
            out.append((r.status_code, r.headers["content-type"], _shape(r.json(), server)))
    return out


def _shape(value: Any, server: LiveServer) -> Any:
    """The reply without what differs between two runs: instants, ids, names and texts."""
    if isinstance(value, dict):
        drop = {"acquired_at", "expires_at", "renewed_at", "detail", "title", "instance"}
        drop |= {"token", "current_token"}  # tokens differ (the second server's key is new)
        return {k: _shape(v, server) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_shape(v, server) for v in value]
    if isinstance(value, str):
        return value.replace(str(server.access_log), "")
    return value


def test_pipelined_requests_are_answered_in_order(live_server: LiveServer, conn: Conn) -> None:
    token = live_server.token_for("jo")
    conn.send(
        request("/v1/leases/acquire", {"key": "p1"}, token)
        + request("/v1/leases/acquire", {"key": "p2"}, token)
        + f"GET /v1/leases/p1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        + request("/v1/leases/release", {"key": "p1"}, token)
    )
    replies = [conn.response() for _ in range(4)]
    assert [r[0] for r in replies] == [200, 200, 200, 200]
    assert replies[0][2]["lease"]["key"] == "p1" and replies[1][2]["lease"]["key"] == "p2"
    assert replies[2][2]["lease"]["holder"] == "jo" and replies[3][2]["released"] is True


def test_connection_close_is_honoured(live_server: LiveServer, conn: Conn) -> None:
    token = live_server.token_for("jo")
    conn.send(request("/v1/leases/acquire", {"key": "c"}, token, "Connection: close"))
    status, headers, _ = conn.response()
    assert status == 200 and headers["connection"] == "close"
    assert conn.closed()


def test_http_1_0_gets_its_reply_and_the_connection_ends(live_server: LiveServer) -> None:
    token = live_server.token_for("jo")
    c = Conn(live_server.port)
    try:
        c.send(request("/v1/leases/acquire", {"key": "old"}, token).replace(b"1.1", b"1.0", 1))
        status, _, body = c.response()
        assert status == 200 and body["lease"]["key"] == "old"
        assert c.closed()
    finally:
        c.close()


def test_an_unknown_token_gets_the_apps_401(live_server: LiveServer, conn: Conn) -> None:
    conn.send(request("/v1/leases/acquire", {"key": "u"}, "not-a-token"))
    status, headers, body = conn.response()
    assert status == 401 and body["code"] == "unauthenticated"
    assert headers["www-authenticate"].startswith("Bearer")
    token = live_server.token_for("jo")  # the connection still serves
    conn.send(request("/v1/leases/acquire", {"key": "u"}, token))
    assert conn.response()[0] == 200


def test_expect_100_continue_is_served(live_server: LiveServer, conn: Conn) -> None:
    token = live_server.token_for("jo")
    whole = request("/v1/leases/acquire", {"key": "e"}, token, "Expect: 100-continue")
    head, body = whole.split(b"\r\n\r\n", 1)
    conn.send(head + b"\r\n\r\n")
    conn.send(body)
    status, _, reply = _skip_continue(conn)
    assert status == 200 and reply["lease"]["key"] == "e"


def _skip_continue(conn: Conn) -> tuple[int, dict[str, str], Any]:
    while b"\r\n\r\n" not in conn.buf:
        conn._more()
    if conn.buf.startswith(b"HTTP/1.1 100"):
        conn.buf = conn.buf.split(b"\r\n\r\n", 1)[1]
    return conn.response()


def test_a_long_poll_is_served(live_server: LiveServer, conn: Conn) -> None:
    jo, al = live_server.token_for("jo"), live_server.token_for("al")
    with live_server.http(jo) as http:
        http.post("/v1/leases/acquire", json={"key": "w", "ttl_ms": 1000}).raise_for_status()
    conn.send(request("/v1/leases/acquire", {"key": "w", "wait_ms": 5000}, al))
    status, _, body = conn.response()
    assert status == 200 and body["lease"]["holder"] == "al"


def test_a_bad_body_gets_the_apps_answer(live_server: LiveServer, conn: Conn) -> None:
    token = live_server.token_for("jo")
    for body, code in [({"key": "b", "ttl_ms": "x"}, 422), ({"nokey": 1}, 422)]:
        conn.send(request("/v1/leases/acquire", body, token))
        status, headers, reply = conn.response()
        assert status == code and headers["content-type"] == "application/problem+json"
        assert reply["code"] == "invalid_request"
    conn.send(request("/v1/leases/acquire", b'{"key" x "b"}', token))
    assert conn.response()[0] == 400


def test_a_crash_in_the_call_is_the_apps_500_and_the_server_goes_on(
    live_server: LiveServer, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = live_server._server
    assert server is not None
    app = server.config.loaded_app
    while not isinstance(app, TenureApp):  # under uvicorn's own middleware
        app = app.app
    state = app.tenure
    assert state is not None
    token = live_server.token_for("jo")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(state.service, "renew", broken)
    conn.send(request("/v1/leases/renew", {"key": "z", "token": 1}, token))
    status, headers, body = conn.response()
    assert status == 500 and headers["content-type"] == "application/problem+json"
    assert body["code"] == "internal"
    conn.send(request("/v1/leases/acquire", {"key": "z"}, token))
    assert conn.response()[0] == 200


def test_hot_calls_are_counted_in_metrics(live_server: LiveServer, conn: Conn) -> None:
    token = live_server.token_for("jo")
    for _ in range(3):
        conn.send(request("/v1/leases/acquire", {"key": "m"}, token))
        conn.response()
    text = httpx.get(f"{live_server.url}/metrics").text
    line = next(
        line
        for line in text.splitlines()
        if line.startswith("tenure_request_duration_seconds_count")
        and 'route="/v1/leases/acquire"' in line
        and 'code="2xx"' in line
    )
    assert float(line.rsplit(" ", 1)[1]) >= 3
