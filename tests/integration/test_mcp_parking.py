"""Attempts and parking through the MCP tools (in-process client, each backend): a parked item
is in the briefing with its failures and advice, ``claim`` is refused naming ``reopen_item``,
and ``reopen_item`` puts it back (forbidden to a stranger, conflict when not parked)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from _mcp import Agent, call, in_process, refused

import tenure

pytestmark = pytest.mark.anyio
TTL = 1_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service(make_service: Callable[..., tenure.Service], clock: tenure.FakeClock) -> tenure.Service:
    clock.set(int(time.time() * 1000))
    return make_service(tenure.PolicySet().with_prefix("items/", max_attempts=2))


@pytest.fixture
def agent(service: tenure.Service) -> Agent:
    return in_process(service)


async def test_a_parked_item_is_briefed_refused_and_reopened(
    agent: Agent, service: tenure.Service, clock: tenure.FakeClock
) -> None:
    async with agent("jo", kind="human") as jo, agent("jo/a1", parent="jo") as a1:
        await call(jo, "create_item", title="fix the login page", id="login")
        for _ in range(2):  # the agent's claim lapses twice; the reaper counts each
            await call(a1, "claim", item_id="login", ttl_ms=TTL)
            clock.advance(TTL + 1)
            tenure.Reaper(service).run_once()
        brief = await call(jo, "briefing")
        parked = brief["parked"]
        assert [x["item"]["id"] for x in parked] == ["login"]
        item = parked[0]["item"]
        assert (item["status"], item["attempts"]) == ("parked", 2)
        assert [f["reason"] for f in item["failures"]] == ["lapsed", "lapsed"]
        advice = [x for x in brief["advice"] if x.startswith("login")]
        assert advice == [
            "login is parked after 2 attempts: lapsed, lapsed: nobody may claim it. Tell the "
            "person who owns it; once the cause is fixed, they (or you, if it is yours) reopen "
            "it with reopen_item and a reason."
        ]
        text = await refused(a1, "claim", "parked", item_id="login")
        assert "reopen" in text
        async with agent("bob", kind="human") as bob:
            await refused(bob, "reopen_item", "forbidden", item_id="login", reason="mine")
        out = await call(jo, "reopen_item", item_id="login", reason="fixed the test fixture")
        assert (out["item"]["status"], out["item"]["attempts"]) == ("open", 0)
        await refused(jo, "reopen_item", "conflict", item_id="login", reason="again")
        claimed = await call(a1, "claim", item_id="login", ttl_ms=TTL)
        assert claimed["item"]["attempts"] == 1
