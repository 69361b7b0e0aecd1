"""Long-poll acquisition (``wait_ms``) across a subtree, over HTTP, on each backend.

A waiter on a key under a held subtree is woken by the subtree's release (not by its deadline,
which is far off), and a waiter for a subtree by the release of the key under it that blocks it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest

from conftest import LiveServer
from procs import wait_for

WAIT_MS = 20_000  # the waiter's wait: a deadline-only wake-up would answer after this
PROMPT_S = 8.0  # far under WAIT_MS: only a wake-up by the release answers within it


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=4) as executor:
        yield executor


def post(server: LiveServer, token: str, path: str, body: dict[str, Any]) -> httpx.Response:
    with server.http(token) as client:
        return client.post(path, json=body)


def acquire(server: LiveServer, token: str, body: dict[str, Any]) -> httpx.Response:
    return post(server, token, "/v1/leases/acquire", body)


def queued(server: LiveServer, token: str, key: str) -> None:
    """Give the waiter time to reach the server and be refused once (it then sleeps)."""
    time.sleep(0.5)


def test_a_waiter_under_a_subtree_wakes_when_the_subtree_is_released(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    jo, bo = live_server.token_for("jo"), live_server.token_for("bo")
    top = acquire(live_server, jo, {"key": "src/", "scope": "subtree", "ttl_ms": 60_000})
    assert top.status_code == 200, top.text
    assert top.json()["lease"]["scope"] == "subtree"
    refused = acquire(live_server, bo, {"key": "src/app/main.py"})
    assert refused.status_code == 409
    assert refused.json()["held_key"] == "src/" and refused.json()["scope"] == "subtree"
    waiter = pool.submit(acquire, live_server, bo, {"key": "src/app/main.py", "wait_ms": WAIT_MS})
    queued(live_server, bo, "src/app/main.py")
    assert not waiter.done()
    released = post(live_server, jo, "/v1/leases/release", {"key": "src/"})
    assert released.json()["released"] is True
    got = waiter.result(PROMPT_S)  # woken by the release, not by its wait's end
    assert got.status_code == 200, got.text
    assert got.json()["lease"]["holder"] == "bo"


def test_a_subtree_waiter_wakes_when_the_key_under_it_is_released(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    jo, bo = live_server.token_for("jo"), live_server.token_for("bo")
    assert acquire(live_server, bo, {"key": "docs/a.md", "ttl_ms": 60_000}).status_code == 200
    body = {"key": "docs/", "scope": "subtree", "wait_ms": WAIT_MS, "task": "reorganise"}
    waiter = pool.submit(acquire, live_server, jo, body)
    queued(live_server, jo, "docs/")
    assert not waiter.done()
    assert post(live_server, bo, "/v1/leases/release", {"key": "docs/a.md"}).status_code == 200
    got = waiter.result(PROMPT_S)
    assert got.status_code == 200, got.text
    assert got.json()["lease"]["scope"] == "subtree"
    blocked = acquire(live_server, bo, {"key": "docs/a.md"})
    assert blocked.status_code == 409 and blocked.json()["task"] == "reorganise"


def test_a_subtree_on_a_key_without_a_slash_is_422(live_server: LiveServer) -> None:
    jo = live_server.token_for("jo")
    got = acquire(live_server, jo, {"key": "src", "scope": "subtree"})
    assert got.status_code == 422 and got.json()["field"] == "scope"
    assert "ending in '/'" in got.json()["detail"]  # the rule, not an unknown field
    assert acquire(live_server, jo, {"key": "src/", "scope": "tree"}).status_code == 422
    with live_server.http(jo) as client:
        assert client.get("/v1/leases", params={"prefix": "src"}).json()["leases"] == []


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_subtree_released_on_one_server_wakes_a_waiter_on_another(store_url: str) -> None:
    """Two servers on one PostgreSQL database: the release's notification names the subtree's
    key, and the waiter under it on the other server watches that key."""
    a = LiveServer(store_url).start()
    b = LiveServer(store_url).start()
    try:
        wait_for(lambda: _listeners(store_url) == 2, timeout=10, what="both servers' LISTEN")
        jo, bo = a.token_for("jo"), b.token_for("bo")
        assert acquire(a, jo, {"key": "lib/", "scope": "subtree", "ttl_ms": 60_000}).is_success
        with ThreadPoolExecutor(1) as pool:
            waiter = pool.submit(acquire, b, bo, {"key": "lib/x.py", "wait_ms": WAIT_MS})
            queued(b, bo, "lib/x.py")
            assert not waiter.done()
            assert post(a, jo, "/v1/leases/release", {"key": "lib/"}).json()["released"]
            got = waiter.result(PROMPT_S)
        assert got.status_code == 200, got.text
        assert got.json()["lease"]["holder"] == "bo"
    finally:
        a.stop()
        b.stop()


def _listeners(url: str) -> int:
    """How many connections to the test's database are listening (pg_stat_activity)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query = 'LISTEN tenure'"
        ).fetchone()
    return int(row[0]) if row else 0
