"""Work that lapsed is findable on every front: ``GET /v1/ready`` lists the claims that lapsed
after the open items, and the clients (blocking, asyncio, direct mode) read the same view with
``items.ready_view``; a supervisor's ``GET /v1/briefing`` lists the lapsed claims it
supervises."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import tenure
from tenure.core.claims import ReadyView

if TYPE_CHECKING:
    from conftest import LiveServer

LAPSE_S = 1.1  # a claim of ttl_ms=1000 (the policy's min_ttl) has lapsed by then


def lapsed_work(client: tenure.Client) -> None:
    """``open`` nobody has, and ``dead``: its holder's claim lapsed."""
    client.items.create("open work", id="open")
    client.items.create("dead work", id="dead")
    client.items.claim("dead", ttl_ms=1000)
    time.sleep(LAPSE_S)


def check(view: ReadyView, holder: str) -> None:
    assert [i.id for i in view.items] == ["open"]
    assert [x.item.id for x in view.lapsed] == ["dead"]
    dead = view.lapsed[0]
    assert dead.lease_state == "lapsed" and dead.item.assignee == holder
    assert dead.lease is not None and dead.lease.state == "expired"


def test_rest_and_clients_show_the_lapsed_claims_after_the_ready_items(
    live_server: LiveServer,
) -> None:
    token = live_server.token_for("agent1")
    with tenure.Client(live_server.url, token=token) as agent1:
        lapsed_work(agent1)
    with live_server.http(live_server.token_for("agent2")) as http:
        reply = http.get("/v1/ready").json()
        assert [i["id"] for i in reply["items"]] == ["open"]
        assert [(x["item"]["id"], x["lease"]["holder"]) for x in reply["lapsed"]] == [
            ("dead", "agent1")
        ]
        assert http.get("/v1/ready", params={"limit": 0}).status_code == 422
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        check(admin.items.ready_view(), "agent1")
        assert [i.id for i in admin.items.ready()] == ["open"]

        async def run() -> ReadyView:
            async with tenure.AsyncClient(live_server.url, token=live_server.admin_token) as aio:
                return await aio.items.ready_view(limit=5)

        check(asyncio.run(run()), "agent1")
    boss = live_server.token_for("boss", kind="human", roles=("supervisor",))
    with live_server.http(boss) as http:
        lapsed = http.get("/v1/briefing").json()["lapsed"]
        assert [(x["item"]["id"], x["lease_state"]) for x in lapsed] == [("dead", "lapsed")]


def test_direct_mode_shows_the_lapsed_claims_after_the_ready_items(store_url: str) -> None:
    with tenure.Client(store_url, principal="cron") as client:
        lapsed_work(client)
        check(client.items.ready_view(), "cron")
        assert [i.id for i in client.items.ready()] == ["open"]
