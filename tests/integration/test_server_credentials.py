"""Credentials that end, and tokens that never were, over HTTP on each backend.

- A token made with ``ttl_ms`` stops authenticating at ``expires_at``: ``401`` whose detail
  names the moment, on the hot path and on the ordinary routes.
- An unknown token is refused before its request joins the executor's group (no database work
  inside a group's transaction for it).
- Failed authentications are counted per client address: past the budget, ``429
  rate_limited`` with ``Retry-After``, while the address's good tokens still work.
- A revoked token's open event stream ends within a second; a dispatcher revokes its agent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import pytest

import tenure
from tenure.settings import AuthSettings, Settings

if TYPE_CHECKING:
    from conftest import LiveServer

from conftest import LiveServer as Server

PROBLEM = "application/problem+json"
UNKNOWN = "tnr_0123456789ab_" + "A" * 43


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == PROBLEM
    body: dict[str, Any] = resp.json()
    assert body["code"] == code and body["status"] == status, body
    return body


def app_of(server: LiveServer) -> Any:
    assert server._server is not None
    return server._server.config.app


def test_a_token_with_ttl_ms_expires(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        bad = admin.post("/v1/principals", json={"name": "ci", "ttl_ms": 999})
        assert problem(bad, 422, "invalid_request")["field"] == "ttl_ms"
        before = int(time.time() * 1000)
        made = admin.post("/v1/principals", json={"name": "ci", "ttl_ms": 1500})
        assert made.status_code == 201, made.text
    expires_at = made.json()["expires_at"]
    assert before + 1500 <= expires_at <= int(time.time() * 1000) + 1500
    with live_server.http(made.json()["token"]) as ci:
        assert ci.get("/v1/me").status_code == 200
        assert ci.post("/v1/leases/acquire", json={"key": "ci/k"}).status_code == 200
        time.sleep(max(0.0, expires_at / 1000 - time.time()) + 0.1)
        for resp in (ci.get("/v1/me"), ci.post("/v1/leases/acquire", json={"key": "ci/k2"})):
            body = problem(resp, 401, "unauthenticated")
            assert body["detail"].startswith("token expired at 20"), body
            assert 'error="invalid_token"' in resp.headers["www-authenticate"]


def test_unknown_tokens_never_reach_the_executor(live_server: LiveServer) -> None:
    executor = app_of(live_server).tenure.executor
    calls: list[Any] = []
    real = executor.call

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    executor.call = counted
    with live_server.http(UNKNOWN) as stranger:
        for verb, body in [("acquire", {"key": "k"}), ("renew", {"key": "k", "token": 1})]:
            for _ in range(3):
                resp = stranger.post(f"/v1/leases/{verb}", json=body)
                problem(resp, 401, "unauthenticated")
    assert calls == []
    with live_server.http(live_server.admin_token) as admin:
        assert admin.post("/v1/leases/acquire", json={"key": "k"}).status_code == 200
    assert len(calls) == 1  # a known token's call does


@pytest.fixture
def strict_server(store_url: str) -> Iterator[LiveServer]:
    """A server that allows 3 failed authentications per address, then one per 10 s."""
    auth = AuthSettings(failures_per_s=0.1, failures_burst=3)
    server = Server(store_url)
    server.settings = Settings(db=store_url, port=server.port, auth=auth)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_failed_authentications_past_the_budget_are_429(strict_server: LiveServer) -> None:
    with strict_server.http(strict_server.admin_token) as admin:
        assert admin.get("/v1/me").status_code == 200  # known before the flood
        for i in range(3):
            headers = {"Authorization": f"Bearer tnr_0123456789a{i}_" + "D" * 43}
            problem(admin.get("/v1/me", headers=headers), 401, "unauthenticated")
        stranger = {"Authorization": f"Bearer {UNKNOWN}"}
        for resp in (
            admin.get("/v1/me", headers=stranger),
            admin.post("/v1/leases/acquire", json={"key": "k"}, headers=stranger),
            admin.get("/v1/events", headers={"Authorization": "Bearer nonsense"}),
        ):
            body = problem(resp, 429, "rate_limited")
            assert resp.headers["retry-after"] == str(body["retry_after_s"])
            assert 1 <= body["retry_after_s"] <= 10
        # the address's good token still works, on every path
        assert admin.get("/v1/me").status_code == 200
        assert admin.post("/v1/leases/acquire", json={"key": "k"}).status_code == 200


def test_a_revoked_tokens_event_stream_ends_within_a_second(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        made = admin.post("/v1/principals", json={"name": "watcher"}).json()
        ended: list[float] = []

        def follow() -> None:
            headers = {"Authorization": f"Bearer {made['token']}"}
            with (
                httpx.Client(base_url=live_server.url, timeout=30) as http,
                http.stream("GET", "/v1/events/stream", headers=headers) as response,
            ):
                assert response.status_code == 200
                for _ in response.iter_lines():
                    pass
            ended.append(time.monotonic())

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        time.sleep(0.5)  # the stream is open
        assert not ended
        path = f"/v1/principals/watcher/tokens/{made['token_id']}"
        revoked_at = time.monotonic()
        assert admin.delete(path).status_code == 204
        reader.join(10)
    assert ended, "the stream went on after its token was revoked"
    assert ended[0] - revoked_at < 2.0  # within a second (a margin for a busy machine)


def test_a_dispatcher_revokes_its_agents_token(live_server: LiveServer) -> None:
    alice_token = live_server.token_for("alice", kind="human")
    bob_token = live_server.token_for("bob", kind="human")
    with live_server.http(alice_token) as alice, live_server.http(bob_token) as bob:
        assert alice.post("/v1/items", json={"id": "job", "title": "t"}).status_code == 201
        sent = alice.post("/v1/items/job/dispatch", json={"agent": "a1", "ttl_ms": 60_000})
        assert sent.status_code == 200, sent.text
        agent = sent.json()["agent"]
        token_id = agent["token"].split("_")[1]
        path = f"/v1/principals/{quote(agent['name'], safe='')}/tokens/{token_id}"
        problem(bob.delete(path), 403, "forbidden")
        with live_server.http(agent["token"]) as bot:
            assert bot.get("/v1/me").status_code == 200
            assert alice.delete(path).status_code == 204
            problem(bot.get("/v1/me"), 401, "unauthenticated")


def test_the_client_makes_a_token_that_expires(live_server: LiveServer) -> None:
    before = int(time.time() * 1000)
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        issued = admin.add_principal("ci", kind="service", ttl_ms=60_000)
        forever = admin.add_principal("ops", kind="service")
    assert issued.expires_at is not None
    assert before + 60_000 <= issued.expires_at <= int(time.time() * 1000) + 60_000
    assert forever.expires_at is None
