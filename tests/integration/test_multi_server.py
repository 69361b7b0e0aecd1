"""Several servers on one PostgreSQL database (SPEC §8): tokens stay monotonic across them,
waiters and followers on one are woken by changes on another (LISTEN/NOTIFY), each expiry is
recorded once, stats agree, and a client given several URLs fails over.

PostgreSQL only: several servers on one SQLite file is not a supported deployment.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest

import tenure
from conftest import LiveServer
from procs import wait_for
from tenure.server.http import ops

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

PROMPT_S = 3.0  # well under the followers' re-read (30 s here) and any holder's deadline


@pytest.fixture(autouse=True)
def no_rereads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Followers re-read the log every 30 s instead of every second: only NOTIFY is fast."""
    monkeypatch.setattr(ops, "RECHECK_S", 30.0)


@pytest.fixture
def pair(store_url: str) -> Iterator[tuple[LiveServer, LiveServer]]:
    a = LiveServer(store_url).start()
    b = LiveServer(store_url).start()
    try:
        wait_for(lambda: _listeners(store_url) == 2, timeout=10, what="both servers' LISTEN")
        yield a, b
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


def client(server: LiveServer, name: str = "root") -> tenure.Client:
    token = server.admin_token if name == "root" else server.token_for(name)
    return tenure.Client(server.url, token=token)


def test_a_release_on_one_server_wakes_a_waiter_on_another(
    pair: tuple[LiveServer, LiveServer],
) -> None:
    a, b = pair
    jo, ann = client(a, "jo"), client(b, "ann")
    held = jo.acquire("jobs/x", ttl_ms=60_000)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(ann.acquire, "jobs/x", None, None, None, 20_000)
        time.sleep(0.5)
        assert not waiting.done()
        released_at = time.monotonic()
        jo.release("jobs/x", held.token)
        lease = waiting.result(timeout=5)
        woken = time.monotonic() - released_at
    assert lease.holder == "ann" and lease.token == held.token + 1
    assert woken < PROMPT_S, woken  # not at the holder's deadline, a minute away


def test_a_follower_on_one_server_sees_events_made_on_another_at_once(
    pair: tuple[LiveServer, LiveServer],
) -> None:
    a, b = pair
    on_a, on_b = client(a), client(b)
    cursor = on_b.events()[-1].id if on_b.events() else 0
    got: dict[str, Any] = {}

    def follow() -> None:
        started = time.monotonic()
        page = on_b.events(after=cursor, key="jobs/seen", wait_ms=10_000)
        got["page"], got["at"] = page, time.monotonic() - started

    thread = threading.Thread(target=follow)
    thread.start()
    time.sleep(0.4)  # the long-poll is waiting on b
    made = time.monotonic()
    on_a.acquire("jobs/seen")
    thread.join(10)
    assert [e.key for e in got["page"]] == ["jobs/seen"]
    assert time.monotonic() - made < PROMPT_S
    assert got["at"] < 0.4 + PROMPT_S, got["at"]  # not at b's own re-read

    with (
        httpx.Client(base_url=b.url, timeout=10) as http,
        http.stream(
            "GET",
            "/v1/events/stream",
            params={"after": got["page"][-1].id},
            headers={"Authorization": f"Bearer {b.admin_token}"},
        ) as stream,
    ):
        on_a.acquire("jobs/streamed")
        for line in stream.iter_lines():
            if line.startswith("data: "):
                assert json.loads(line[6:])["key"] == "jobs/streamed"
                break


def test_tokens_grow_across_servers_and_each_expiry_is_recorded_once(
    pair: tuple[LiveServer, LiveServer],
) -> None:
    a, b = pair
    clients = [client(a, "jo"), client(b, "jo")]
    tokens = []
    for i in range(10):
        lease = clients[i % 2].acquire("jobs/shared", ttl_ms=60_000)
        tokens.append(lease.token)
        clients[i % 2].release("jobs/shared", lease.token)
    assert tokens == sorted(tokens) and len(set(tokens)) == 10
    for i in range(20):
        clients[i % 2].acquire(f"jobs/lapse-{i}", ttl_ms=1_000)
    time.sleep(1.5)  # both servers' reapers run meanwhile
    wait_for(lambda: clients[0].stats()["endings"]["expired"] == 20, timeout=5, what="20 expiries")
    expired = clients[0].events(type="expired", limit=1000)
    assert sorted(e.key for e in expired) == sorted(f"jobs/lapse-{i}" for i in range(20))
    one, other = clients[0].stats(), clients[1].stats()
    for field in ("endings", "acquisitions", "conflicts", "live_leases", "windows"):
        assert one[field] == other[field], field


def test_a_client_given_both_urls_fails_over_during_a_heartbeat(
    pair: tuple[LiveServer, LiveServer],
) -> None:
    a, b = pair
    both = tenure.Client(f"{a.url},{b.url}", token=a.token_for("jo"))
    with both.lease("jobs/guarded", ttl=1.5) as lease:
        first = lease.token
        a.stop()  # the server the client was talking to goes away
        time.sleep(2.5)  # more than a ttl: only renewals through b keep it alive
        lease.check()
        assert both.get_lease("jobs/guarded").expires_at > time.time() * 1000
        assert lease.token == first
    assert both.get_lease("jobs/guarded").state == "released"
    with pytest.raises(ValueError, match="twice"):
        tenure.Client(f"{b.url},{b.url}", token="x")
    both.close()
