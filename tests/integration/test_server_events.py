"""The event log over HTTP, on each backend: long-poll (`wait_ms`), server-sent events with
`Last-Event-ID` resume, and the clients' `events(follow=True)`."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import httpx
import pytest

import tenure
from tenure.server.http import ops

if TYPE_CHECKING:
    from conftest import LiveServer

PROMPT_S = 3.0  # a long-poll answers within this of an event (its fallback re-read is at 30 s)


@pytest.fixture
def no_rereads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Followers re-read the log every 30 s instead of every second: only the bell is fast."""
    monkeypatch.setattr(ops, "RECHECK_S", 30.0)


def sse(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The frames of a server-sent event stream: ``{"id", "event", "data"}`` (comments and the
    ``retry`` frame are skipped)."""
    frame: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in frame:
                yield frame
            frame = {}
        elif line.startswith(":") or line.startswith("retry:"):
            continue
        else:
            name, _, value = line.partition(": ")
            frame[name] = json.loads(value) if name == "data" else value


def test_a_long_poll_answers_as_soon_as_an_event_is_recorded(
    live_server: LiveServer, no_rereads: None
) -> None:
    with live_server.http(live_server.admin_token) as http:
        cursor = http.get("/v1/events").json()["next"]
        started = time.monotonic()
        idle = http.get("/v1/events", params={"after": cursor, "wait_ms": 400})
        assert idle.status_code == 200 and idle.json() == {"events": [], "next": cursor}
        assert time.monotonic() - started >= 0.39

        def later() -> None:
            time.sleep(0.3)
            with live_server.http(live_server.admin_token) as other:
                other.post("/v1/leases/acquire", json={"key": "jobs/a"}).raise_for_status()

        threading.Thread(target=later).start()
        started = time.monotonic()
        reply = http.get("/v1/events", params={"after": cursor, "wait_ms": 10_000, "key": "jobs/a"})
        waited = time.monotonic() - started
        assert reply.status_code == 200
        assert [e["type"] for e in reply.json()["events"]] == ["acquired"]
        assert 0.25 < waited < 0.3 + PROMPT_S, waited  # woken, not at a re-read or the end


def test_a_long_poll_with_a_filter_ignores_other_events(
    live_server: LiveServer, no_rereads: None
) -> None:
    with live_server.http(live_server.admin_token) as http:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                http.get, "/v1/events", params={"key": "jobs/b", "wait_ms": 5_000}
            )
            time.sleep(0.2)
            http.post("/v1/leases/acquire", json={"key": "jobs/other"}).raise_for_status()
            time.sleep(0.3)
            assert not waiting.done()  # an event of another key does not end the wait
            http.post("/v1/leases/acquire", json={"key": "jobs/b"}).raise_for_status()
            reply = waiting.result(timeout=PROMPT_S)
        assert [(e["type"], e["key"]) for e in reply.json()["events"]] == [("acquired", "jobs/b")]


def test_bad_event_queries_are_refused(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as http:
        for params in ({"wait_ms": -1}, {"wait_ms": 300_001}, {"after": "x"}, {"limit": 0}):
            assert http.get("/v1/events", params=params).status_code == 422, params
        both = http.get("/v1/events", params={"key": "a", "item": "b"})
        assert both.status_code == 200 and both.json()["events"] == []
        stream = http.get("/v1/events/stream", headers={"Last-Event-ID": "nope"})
        assert stream.status_code == 422
        assert http.get("/v1/events/stream", params={"after": -1}).status_code == 422
        assert http.get("/v1/events/stream", params={"key": "x" * 600}).status_code == 413
    with httpx.Client(base_url=live_server.url) as anonymous:
        assert anonymous.get("/v1/events/stream").status_code == 401


def test_the_stream_shows_acquired_released_expired_in_order_and_resumes_without_gaps(
    live_server: LiveServer,
) -> None:
    token = live_server.admin_token
    client = tenure.Client(live_server.url, token=token)
    start = client.events(limit=1000)
    cursor = start[-1].id if start else 0
    seen: list[dict[str, Any]] = []
    with (
        httpx.Client(base_url=live_server.url, timeout=10) as http,
        http.stream(
            "GET",
            "/v1/events/stream",
            params={"after": cursor},
            headers={"Authorization": f"Bearer {token}"},
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lease = client.acquire("jobs/s", ttl_ms=5_000)
        client.release("jobs/s", lease.token)
        client.acquire("jobs/t", ttl_ms=1_000)  # expires by itself
        for frame in sse(response):
            seen.append(frame)
            if frame["event"] == "expired":
                break
    assert [(f["event"], f["data"]["key"]) for f in seen] == [
        ("acquired", "jobs/s"),
        ("released", "jobs/s"),
        ("acquired", "jobs/t"),
        ("expired", "jobs/t"),
    ]
    assert all(f["id"] == str(f["data"]["id"]) for f in seen)
    assert [f["data"]["id"] for f in seen] == sorted(f["data"]["id"] for f in seen)

    # Disconnected: events happen meanwhile; a resume with Last-Event-ID misses none.
    for i in range(5):
        client.acquire(f"jobs/gap-{i}")
    resumed: list[dict[str, Any]] = []
    with (
        httpx.Client(base_url=live_server.url, timeout=10) as http,
        http.stream(
            "GET",
            "/v1/events/stream",
            headers={"Authorization": f"Bearer {token}", "Last-Event-ID": seen[-1]["id"]},
        ) as response,
    ):
        for frame in sse(response):
            resumed.append(frame)
            if len(resumed) == 5:
                break
    log = client.events(after=cursor, limit=1000)
    assert [f["data"] for f in seen + resumed] == [e.to_dict() for e in log]
    client.close()


def test_clients_follow_the_log(live_server: LiveServer) -> None:
    client = tenure.Client(live_server.url, token=live_server.admin_token)
    client.acquire("jobs/before")
    cursor = client.events()[-1].id

    def produce() -> None:
        time.sleep(0.2)
        for key in ("jobs/f1", "jobs/f2", "jobs/f3"):
            client.acquire(key)
            time.sleep(0.05)

    threading.Thread(target=produce).start()
    got = []
    for event in client.events(after=cursor, follow=True):
        got.append(event.key)
        if len(got) == 3:
            break
    assert got == ["jobs/f1", "jobs/f2", "jobs/f3"]

    async def follow_async() -> list[str | None]:
        async with tenure.AsyncClient(live_server.url, token=live_server.admin_token) as aio:
            page = await aio.events(after=cursor, limit=2)
            assert [e.key for e in page] == ["jobs/f1", "jobs/f2"]
            keys = []
            async for event in aio.events(after=cursor, follow=True, key="jobs/f3"):
                keys.append(event.key)
                break
            return keys

    assert asyncio.run(follow_async()) == ["jobs/f3"]
    client.close()
