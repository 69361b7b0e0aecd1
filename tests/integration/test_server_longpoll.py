"""Long-poll acquisition (``wait_ms``) over HTTP, on each backend (SPEC §4).

A waiter is served promptly when the key frees (a release wakes it, an expiry is slept until),
waiters of one key are served in arrival order, and a wait that ends returns ``409 lease_held``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LiveServer

PROMPT_S = 0.1  # a release wakes the head waiter within this
EXPIRY_SLACK_MS = 300  # an expiry is noticed within this


@dataclass
class Outcome:
    status: int
    body: dict[str, Any]
    started: float  # time.monotonic()
    done: float
    wall_ms: int  # time.time() in ms when the reply arrived


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=8) as executor:
        yield executor


def acquire(server: LiveServer, token: str, key: str, wait_ms: int, **extra: Any) -> Outcome:
    with server.http(token) as client:
        started = time.monotonic()
        resp = client.post("/v1/leases/acquire", json={"key": key, "wait_ms": wait_ms, **extra})
        done = time.monotonic()
        return Outcome(resp.status_code, resp.json(), started, done, now_ms())


def hold(server: LiveServer, token: str, key: str, ttl_ms: int = 30_000) -> dict[str, Any]:
    with server.http(token) as client:
        resp = client.post("/v1/leases/acquire", json={"key": key, "ttl_ms": ttl_ms, "task": "t"})
    assert resp.status_code == 200, resp.text
    lease: dict[str, Any] = resp.json()["lease"]
    return lease


def waiting(server: LiveServer) -> None:
    """Give waiters that were just started the time to reach the server and queue."""
    time.sleep(0.3)


def test_a_release_wakes_the_waiter_at_once(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    alice, bob = live_server.token_for("alice"), live_server.token_for("bob")
    held = hold(live_server, alice, "k")
    waiter = pool.submit(acquire, live_server, bob, "k", 10_000)
    waiting(live_server)
    assert not waiter.done()
    with live_server.http(alice) as client:
        released_at = time.monotonic()
        assert client.post("/v1/leases/release", json={"key": "k"}).json()["released"] is True
        replied_at = time.monotonic()
    got = waiter.result(10)
    assert got.status == 200, got.body
    assert got.body["lease"]["holder"] == "bob"
    assert got.body["lease"]["token"] == held["token"] + 1
    assert got.done >= released_at
    assert got.done - replied_at < PROMPT_S, got.done - replied_at


def test_a_force_release_wakes_the_waiter_at_once(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    alice, bob = live_server.token_for("alice"), live_server.token_for("bob")
    hold(live_server, alice, "k")
    waiter = pool.submit(acquire, live_server, bob, "k", 10_000)
    waiting(live_server)
    with live_server.http(live_server.admin_token) as admin:
        resp = admin.post("/v1/leases/force-release", json={"key": "k", "reason": "stuck"})
        assert resp.status_code == 200
        replied_at = time.monotonic()
    got = waiter.result(10)
    assert got.status == 200 and got.body["lease"]["holder"] == "bob"
    assert got.done - replied_at < PROMPT_S


def test_an_expiry_hands_the_key_over_promptly(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    alice, bob = live_server.token_for("alice"), live_server.token_for("bob")
    held = hold(live_server, alice, "k", ttl_ms=1000)  # the policy's minimum
    waiter = pool.submit(acquire, live_server, bob, "k", 5_000)
    got = waiter.result(10)
    assert got.status == 200, got.body
    lease = got.body["lease"]
    assert lease["holder"] == "bob" and lease["token"] == held["token"] + 1
    # Never before the deadline (one holder), and promptly after it, with no release.
    assert lease["acquired_at"] >= held["expires_at"]
    assert lease["acquired_at"] - held["expires_at"] < EXPIRY_SLACK_MS
    assert got.wall_ms - held["expires_at"] < EXPIRY_SLACK_MS, got.wall_ms - held["expires_at"]


def test_waiters_are_served_in_arrival_order(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    alice = live_server.token_for("alice")
    names = ["w1", "w2", "w3"]
    tokens = {name: live_server.token_for(name) for name in names}
    served: list[tuple[str, int]] = []
    released: list[float] = []  # when each holder's release was acknowledged
    lock = threading.Lock()

    def wait_then_release(name: str) -> Outcome:
        got = acquire(live_server, tokens[name], "k", 20_000)
        if got.status == 200:
            with lock:
                served.append((name, got.body["lease"]["token"]))
            time.sleep(0.05)
            with live_server.http(tokens[name]) as client:
                client.post("/v1/leases/release", json={"key": "k"})
                released.append(time.monotonic())
        return got

    held = hold(live_server, alice, "k")
    futures: list[Future[Outcome]] = []
    for name in names:
        futures.append(pool.submit(wait_then_release, name))
        time.sleep(0.15)  # distinct arrivals
    waiting(live_server)
    with live_server.http(alice) as client:
        client.post("/v1/leases/release", json={"key": "k"})
        released.insert(0, time.monotonic())
    outcomes = [f.result(30) for f in futures]
    assert [o.status for o in outcomes] == [200, 200, 200], [o.body for o in outcomes]
    assert [name for name, _ in served] == names
    assert [token for _, token in served] == [held["token"] + i for i in (1, 2, 3)]
    # Each waiter was served promptly once the previous holder's release was acknowledged.
    for outcome, previous_release in zip(outcomes, released, strict=False):
        assert outcome.done - previous_release < PROMPT_S, outcome.done - previous_release


def test_a_waiter_that_gives_up_leaves_the_line(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    alice, w1, w2 = (live_server.token_for(n) for n in ("alice", "w1", "w2"))
    hold(live_server, alice, "k")
    impatient = pool.submit(acquire, live_server, w1, "k", 400)
    time.sleep(0.1)
    patient = pool.submit(acquire, live_server, w2, "k", 10_000)
    assert impatient.result(10).status == 409
    with live_server.http(alice) as client:
        client.post("/v1/leases/release", json={"key": "k"})
        replied_at = time.monotonic()
    got = patient.result(10)
    assert got.status == 200 and got.body["lease"]["holder"] == "w2"
    assert got.done - replied_at < PROMPT_S


def test_the_end_of_a_wait_is_409_lease_held(
    live_server: LiveServer, pool: ThreadPoolExecutor
) -> None:
    alice, bob = live_server.token_for("alice"), live_server.token_for("bob")
    held = hold(live_server, alice, "k")
    got = acquire(live_server, bob, "k", 600)
    assert got.status == 409
    assert got.body["code"] == "lease_held"
    assert got.body["holder"] == "alice" and got.body["task"] == "t"
    assert got.body["expires_at"] == held["expires_at"]
    assert 0.6 <= got.done - got.started < 1.5, got.done - got.started
    # Without wait_ms (or 0): at once, even while others wait in line.
    waiter = pool.submit(acquire, live_server, bob, "k", 5_000)
    waiting(live_server)
    for wait in (0, None):
        extra = {} if wait is None else {"wait_ms": wait}
        with live_server.http(live_server.token_for("carol")) as carol:
            started = time.monotonic()
            resp = carol.post("/v1/leases/acquire", json={"key": "k", **extra})
            assert resp.status_code == 409 and time.monotonic() - started < 0.5
    with live_server.http(alice) as client:
        client.post("/v1/leases/release", json={"key": "k"})
    assert waiter.result(10).status == 200


def test_waiting_for_a_free_key_or_your_own_returns_at_once(live_server: LiveServer) -> None:
    alice = live_server.token_for("alice")
    first = acquire(live_server, alice, "k", 10_000)
    assert first.status == 200 and first.done - first.started < 0.5
    again = acquire(live_server, alice, "k", 10_000)  # your own lease: a renewal
    assert again.status == 200 and again.done - again.started < 0.5
    assert again.body["lease"]["token"] == first.body["lease"]["token"]
    with live_server.http(live_server.admin_token) as admin:
        resp = admin.post("/v1/leases/acquire", json={"key": "other", "wait_ms": 300_000})
        assert resp.status_code == 200
