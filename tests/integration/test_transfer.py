"""``POST /v1/leases/transfer`` on every path: the blocking and asyncio clients over a real
server, the wire's refusals, direct mode on the database, and ``tenure lock transfer``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import tenure
from procs import Shell, doc, fails, ok, remembered


def test_a_process_hands_its_lease_to_the_next_one(live_server: Any) -> None:
    token = live_server.token_for("web", kind="service")
    with (
        tenure.Client(live_server.url, token=token, session="r1") as r1,
        tenure.Client(live_server.url, token=token, session="r2") as r2,
    ):
        old = r1.acquire("jobs/a", ttl_ms=60_000)
        r1.fenced_write("jobs/a", old.token, "from r1")
        moved = r1.transfer("jobs/a", old.token, "r2")
        assert (moved.session, moved.token > old.token) == ("r2", True)
        with pytest.raises(tenure.StaleToken):  # the old session's writes stop
            r1.fenced_write("jobs/a", old.token, "late")
        assert r2.renew("jobs/a", moved.token).token == moved.token
        assert r2.fenced_write("jobs/a", moved.token, "from r2").version == 2
        with pytest.raises(tenure.Conflict):
            r2.transfer("jobs/a", moved.token, "r2")
        assert [e.type for e in r2.events(key="jobs/a")][-2:] == ["transferred", "written"]


def test_the_asyncio_client_and_the_wire(live_server: Any) -> None:
    token = live_server.token_for("agent-1", kind="agent")

    async def go() -> tenure.Lease:
        async with tenure.AsyncClient(live_server.url, token=token, session="s") as client:
            lease = await client.acquire("jobs/x", ttl_ms=60_000)
            return await client.transfer("jobs/x", lease.token, "t")

    moved = asyncio.run(go())
    assert (moved.key, moved.session, moved.state) == ("jobs/x", "t", "live")
    with httpx.Client(base_url=live_server.url) as http:
        auth = {"Authorization": f"Bearer {token}"}
        body = {"key": "jobs/x", "token": moved.token}
        missing = http.post("/v1/leases/transfer", json=body, headers=auth)
        assert missing.status_code == 422 and missing.json()["field"] == "to_session"
        bad = http.post("/v1/leases/transfer", json={**body, "to_session": 7}, headers=auth)
        assert bad.status_code == 422 and bad.json()["field"] == "to_session"
        same = http.post("/v1/leases/transfer", json={**body, "to_session": "t"}, headers=auth)
        assert same.status_code == 409 and same.json()["code"] == "conflict"
        gone = {"key": "jobs/x", "token": moved.token - 1, "to_session": "u"}
        lost = http.post("/v1/leases/transfer", json=gone, headers=auth)
        assert lost.status_code == 409 and lost.json()["code"] == "lease_lost"
        now = http.get("/v1/leases/jobs/x", headers=auth).json()["lease"]
        assert (now["session"], now["token"]) == ("t", moved.token)


def test_direct_mode_answers_as_the_server(store_url: str) -> None:
    with tenure.Client(store_url, principal="cron", session="nightly") as client:
        lease = client.acquire("jobs/nightly", ttl_ms=60_000)
        moved = client.transfer("jobs/nightly", lease.token, "morning")
        assert (moved.holder, moved.session) == ("cron", "morning")


def test_the_cli_hands_over_and_forgets_the_token(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    ok(jo, "lock", "acquire", "jobs/a", "--ttl", "1m")
    token = remembered(jo)["jobs/a"]
    out = ok(jo, "lock", "transfer", "jobs/a", "--to", "run:web-2:4242")
    assert out.strip() == f"jobs/a: session 'run:web-2:4242' holds it now (token {token + 1})"
    assert remembered(jo) == {}
    lease = doc(jo, "lock", "show", "jobs/a")["lease"]
    assert (lease["session"], lease["token"]) == ("run:web-2:4242", token + 1)
    assert "no token remembered" in fails(jo, 2, "lock", "transfer", "jobs/a", "--to", "x")
    stale = fails(jo, 4, "lock", "transfer", "jobs/a", "--to", "x", "--token", str(token))
    assert "jobs/a" in stale
    moved = jo.json("lock", "transfer", "jobs/a", "--to", "x", "--token", str(token + 1))
    assert moved["lease"]["session"] == "x"
    done = jo("lock", "transfer", "jobs/a", "--to", "x", "--token", str(token + 2))
    assert done.returncode == 3 and "held by session 'x' already" in done.stderr
