"""A waiter that is gone is never granted: a waiting acquisition (or ``GET /v1/events`` long-poll)
whose client disconnected is withdrawn, over a real server on each backend.

The waiting request is sent on a raw socket (so the test decides when its connection ends), with
a ``Content-Length`` (the hot path's ASGI layer serves it) or chunked (FastAPI's route does).
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from conftest import LiveServer
from procs import Shell
from tenure.settings import Limits, Settings

KEY = "deploy/prod"
DEADLINE_S = 15.0


@pytest.fixture(params=[False, True], ids=["hot-path", "asgi"])
def server(request: pytest.FixtureRequest, store_url: str) -> Iterator[LiveServer]:
    live = LiveServer(store_url, access_log=request.param).start()
    try:
        yield live
    finally:
        live.stop()


def waiting_request(
    server: LiveServer, token: str, method: str, path: str, body: Any, *, chunked: bool
) -> socket.socket:
    """Send one request on a fresh connection and return the socket, unread."""
    raw = b"" if body is None else json.dumps(body).encode()
    head = [
        f"{method} {path} HTTP/1.1",
        f"Host: 127.0.0.1:{server.port}",
        f"Authorization: Bearer {token}",
        "Content-Type: application/json",
    ]
    if body is not None:
        head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(raw)}")
    payload = ("\r\n".join(head) + "\r\n\r\n").encode()
    if body is not None:
        payload += f"{len(raw):x}\r\n".encode() + raw + b"\r\n0\r\n\r\n" if chunked else raw
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(payload)
    return sock


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def events(http: httpx.Client, **query: Any) -> list[dict[str, Any]]:
    reply = http.get("/v1/events", params={"key": KEY, "limit": 500, **query})
    assert reply.status_code == 200, reply.text
    found: list[dict[str, Any]] = reply.json()["events"]
    return found


def refused(http: httpx.Client, actor: str) -> int:
    """How often ``actor``'s acquisition of KEY was refused (once refused, it waits in line)."""
    return sum(e["actor"] == actor for e in events(http, type="conflict"))


def acquire(http: httpx.Client, **body: Any) -> httpx.Response:
    return http.post("/v1/leases/acquire", json={"key": KEY, "ttl_ms": 30_000, **body})


def assert_no_lease_kept_by(http: httpx.Client, name: str) -> None:
    """Every lease ``name`` was granted on KEY was released at once with reason waiter_gone."""
    granted = [e for e in events(http, type="acquired") if e["holder"] == name]
    ended = {
        e["token"]: e["reason"]
        for e in events(http, type="released")
        if e["holder"] == name and e["reason"] == "waiter_gone"
    }
    assert all(e["token"] in ended for e in granted), (granted, ended)


@pytest.mark.parametrize("chunked", [False, True], ids=["hot-asgi", "fastapi"])
def test_a_waiter_that_disconnected_is_never_granted(server: LiveServer, chunked: bool) -> None:
    with server.http(server.token_for("ann")) as ann, server.http(server.token_for("cy")) as cy:
        held = acquire(ann)
        assert held.status_code == 200, held.text
        body = {"key": KEY, "ttl_ms": 600_000, "wait_ms": 60_000}
        gone = waiting_request(
            server, server.token_for("bo"), "POST", "/v1/leases/acquire", body, chunked=chunked
        )
        wait_for(lambda: refused(ann, "bo"), "bo's acquisition to wait in line")
        gone.close()  # bo gives up (curl -m, Ctrl-C): its connection ends
        released = ann.post(
            "/v1/leases/release", json={"key": KEY, "token": held.json()["lease"]["token"]}
        )
        assert released.json()["released"] is True
        # the next live waiter gets the key, not the 10-minute grant of a client that left
        got = acquire(cy, wait_ms=10_000)
        assert got.status_code == 200, got.text
        assert got.json()["lease"]["holder"] == "cy"
        assert_no_lease_kept_by(ann, "bo")


def test_a_waiter_that_left_does_not_hold_its_place_in_line(server: LiveServer) -> None:
    """bo asked first and left; cy, behind bo, is served as soon as the key frees."""
    with server.http(server.token_for("ann")) as ann, server.http(server.token_for("cy")) as cy:
        held = acquire(ann, ttl_ms=60_000)
        body = {"key": KEY, "ttl_ms": 600_000, "wait_ms": 60_000}
        gone = waiting_request(
            server, server.token_for("bo"), "POST", "/v1/leases/acquire", body, chunked=False
        )
        wait_for(lambda: refused(ann, "bo"), "bo's acquisition to wait in line")
        gone.close()
        wait_for(lambda: waiting(server) == 0, "bo's wait to be withdrawn")
        token = held.json()["lease"]["token"]
        ann.post("/v1/leases/release", json={"key": KEY, "token": token})
        got = acquire(cy, wait_ms=10_000)
        assert got.status_code == 200, got.text
        assert not [e for e in events(ann, type="acquired") if e["holder"] == "bo"]


def metric(server: LiveServer, name: str) -> float | None:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def waiting(server: LiveServer) -> float | None:
    return metric(server, "tenure_waiting_acquisitions")


def test_an_abandoned_events_long_poll_gives_its_wait_back(store_url: str) -> None:
    """One open wait allowed: once the first long-poll's client left, a second is accepted
    (not 429 until the first one's minute ends), and the server counts no open wait."""
    settings = Settings(db=store_url, limits=Limits(max_waits=1))
    live = LiveServer(store_url, settings).start()
    try:
        token = live.token_for("ann")
        with live.http(token) as ann:
            after = ann.get("/v1/events", params={"limit": 1}).json()["next"]
            query = {"after": after, "wait_ms": 1, "type": "acquired"}
            path = f"/v1/events?after={after}&wait_ms=60000&type=acquired"
            first = waiting_request(live, token, "GET", path, None, chunked=False)
            poll = lambda: ann.get("/v1/events", params=query).status_code  # noqa: E731
            wait_for(lambda: metric(live, "tenure_open_waits") == 1, "the long-poll to wait")
            assert poll() == 429  # it holds the one wait
            first.close()
            wait_for(lambda: poll() == 200, "a long-poll to be accepted again")
            assert metric(live, "tenure_open_waits") == 0
    finally:
        live.stop()


COMMANDS = {
    "lock-acquire": ["lock", "acquire", KEY, "--ttl", "10m", "--wait", "60s"],
    "run": ["run", KEY, "--ttl", "10m", "--wait", "60s", "--", "true"],
}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_cli_wait_interrupted_leaves_nothing_held(
    live_server: LiveServer, shell: Callable[..., Shell], command: str, signum: int
) -> None:
    """``tenure lock acquire KEY --wait 60s`` or ``tenure run KEY --wait 60s -- CMD``
    interrupted while it waits: when the key frees, the next waiter gets it."""
    bo = shell("bo")
    args = COMMANDS[command]
    with (
        live_server.http(live_server.token_for("ann")) as ann,
        live_server.http(live_server.token_for("cy")) as cy,
    ):
        held = acquire(ann, ttl_ms=60_000)
        proc = subprocess.Popen(
            [sys.executable, "-m", "tenure.cli", *args],
            env=bo.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: refused(ann, "bo") > 0, "the CLI's acquisition to be refused")
            wait_for(lambda: waiting(live_server) == 1, "it to wait in line")
            proc.send_signal(signum)
            proc.communicate(timeout=20)
            assert proc.returncode != 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        token = held.json()["lease"]["token"]
        ann.post("/v1/leases/release", json={"key": KEY, "token": token})
        got = acquire(cy, wait_ms=10_000)
        assert got.status_code == 200, got.text
        assert_no_lease_kept_by(ann, "bo")
