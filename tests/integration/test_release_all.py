"""``POST /v1/leases/release-all`` on every path: the blocking and asyncio clients over a real
server, direct mode on the database, and ``tenure lock release-all``; several processes under one
principal (a session each) end only their own leases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

import tenure
from procs import Shell, doc, ok, remembered


def test_each_replica_ends_only_its_own_session(live_server: Any) -> None:
    token = live_server.token_for("web", kind="service")
    with (
        tenure.Client(live_server.url, token=token, session="r1") as r1,
        tenure.Client(live_server.url, token=token, session="r2") as r2,
    ):
        r1.acquire("jobs/a", ttl_ms=60_000)
        r1.acquire("jobs/b", ttl_ms=60_000)
        r2.acquire("jobs/c", ttl_ms=60_000)
        result = r1.release_all()
        assert [lease.key for lease in result.released] == ["jobs/a", "jobs/b"]
        assert r1.release_all() == tenure.ReleaseAllResult(())  # a repeat ends nothing
        assert r2.get_lease("jobs/c").state == "live"
        assert [lease.key for lease in r2.release_all().released] == ["jobs/c"]


def test_the_asyncio_client_and_the_wire(live_server: Any) -> None:
    token = live_server.token_for("agent-1", kind="agent")

    async def go() -> tenure.ReleaseAllResult:
        async with tenure.AsyncClient(live_server.url, token=token, session="s") as client:
            await client.acquire("jobs/x", ttl_ms=60_000)
            return await client.release_all()

    assert [lease.state for lease in asyncio.run(go()).released] == ["released"]
    with httpx.Client(base_url=live_server.url) as http:
        auth = {"Authorization": f"Bearer {token}"}
        bad = http.post("/v1/leases/release-all", json={"session": 7}, headers=auth)
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"
        extra = http.post("/v1/leases/release-all", json={"keys": ["a"]}, headers=auth)
        assert extra.status_code == 422 and extra.json()["field"] == "keys"
        empty = http.post("/v1/leases/release-all", json={}, headers=auth)
        assert empty.status_code == 200 and empty.json() == {"released": []}


def test_direct_mode_answers_as_the_server(store_url: str) -> None:
    with tenure.Client(store_url, principal="cron", session="nightly") as client:
        client.acquire("jobs/nightly", ttl_ms=60_000)
        released = client.release_all().released
        assert [(lease.key, lease.state) for lease in released] == [("jobs/nightly", "released")]


def test_the_cli_forgets_the_tokens_it_released(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    ok(jo, "lock", "acquire", "jobs/a", "--ttl", "1m")
    ok(jo, "lock", "acquire", "jobs/b", "--ttl", "1m")
    assert set(remembered(jo)) == {"jobs/a", "jobs/b"}
    assert ok(jo, "lock", "release-all").strip() == "released jobs/a, jobs/b"
    assert remembered(jo) == {}
    assert doc(jo, "lock", "release-all") == {"released": []}
    assert ok(jo, "lock", "release-all").strip() == "nothing to release"
