"""What a refusal tells an agent depends on who asks: the holder, a stranger or a supervisor.
Over ``/mcp`` on a real server, on each backend, through the SDK's streamable HTTP client: a
stale epoch from the session that holds the item under a newer one is told that epoch; after
its own ``complete`` the item is done (by you, at …) and nothing is left to do; a finished
item names who finished it and when; lock refusals talk about locks, item refusals about items;
the claim tool and ``lease_held`` give one policy on waiting; times read in their tense; replies
are compact JSON with ``expires_in_ms`` beside each ``expires_at``."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import httpx2
import pytest
from _mcp import call, refused, text_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.anyio
WAITING = "do not wait on a held item: pick another (tool ready); come back later only if nothing"
FUTURE = re.compile(r"\d\d:\d\d:\d\dZ, in \d")  # an instant said to come


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(server: LiveServer, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def three(server: LiveServer) -> AsyncIterator[tuple[Client, Client, Client]]:
    """The holder (jo/agent-1), a stranger (kim/agent-1) and the holder's supervisor (jo)."""
    boss = server.token_for("jo", kind="human", roles=("supervisor",))
    holder = server.token_for("jo/agent-1", parent="jo")
    stranger = server.token_for("kim/agent-1")
    async with (
        connected(server, holder) as a,
        connected(server, stranger) as b,
        connected(server, boss) as c,
    ):
        yield a, b, c


def item(server: LiveServer, item_id: str) -> None:
    with tenure.Client(server.url, token=server.admin_token) as root:
        root.items.create(f"work {item_id}", id=item_id)


async def test_a_stale_epoch_from_the_holder_of_a_newer_one(live_server: LiveServer) -> None:
    item(live_server, "x")
    async with three(live_server) as (holder, stranger, boss):
        old = (await call(holder, "claim", item_id="x"))["epoch"]
        await call(holder, "release", item_id="x", epoch=old)
        new = (await call(holder, "claim", item_id="x"))["epoch"]
        assert new > old
        for tool, args in (("progress", {"message": "half"}), ("complete", {})):
            text = await refused(holder, tool, "stale_token", item_id="x", epoch=old, **args)
            assert f"you hold it under epoch {new}. Use epoch {new}" in text, text
            assert "stop this work" not in text
        for other in (stranger, boss):
            text = await refused(
                other, "progress", "stale_token", item_id="x", epoch=old, message="m"
            )
            assert "stop this work" in text and "you hold it" not in text, text
        done = await call(holder, "complete", item_id="x", epoch=new)
        assert done["item"]["status"] == "done"


async def test_after_its_own_complete_nothing_is_left(live_server: LiveServer) -> None:
    item(live_server, "x")
    async with three(live_server) as (holder, stranger, boss):
        epoch = (await call(holder, "claim", item_id="x"))["epoch"]
        await call(holder, "complete", item_id="x", epoch=epoch)
        for tool, args in (("extend", {"by_ms": 60_000}), ("renew", {})):
            text = await refused(holder, tool, "lease_lost", item_id="x", **args)
            assert text.startswith("lease_lost: items/x is done: completed by you (jo/agent-1) at ")
            assert "There is nothing left to do on it" in text
            assert "claim or acquire" not in text and "claim the item again" not in text
            assert not FUTURE.search(text), text
        text = await refused(holder, "progress", "conflict", item_id="x", epoch=epoch, message="m")
        assert "completed by you (jo/agent-1)" in text and "nothing left to do" in text
        for other in (stranger, boss):
            text = await refused(other, "claim", "conflict", item_id="x")
            assert text.startswith("conflict: items/x is done: completed by jo/agent-1 at "), text
            assert "There is nothing left to do on it" in text
            assert "(field status)" not in text and "Fix the argument" not in text
            assert not FUTURE.search(text), text


async def test_locks_talk_about_locks_and_items_about_items(live_server: LiveServer) -> None:
    item(live_server, "x")
    async with three(live_server) as (holder, stranger, boss):
        await call(holder, "claim", item_id="x", task="fix")
        await call(holder, "acquire_lock", key="deploy/prod")
        for other in (stranger, boss):
            text = await refused(other, "claim", "lease_held", item_id="x")
            assert WAITING in text.lower() and "lock" not in text, text
            assert re.search(r"until \d\d:\d\d:\d\dZ, in \d+s\.", text), text  # to come
            text = await refused(other, "acquire_lock", "lease_held", key="deploy/prod")
            assert "holds this lock: wait for it" in text and "use another key" in text, text
            assert "pick another item" not in text and "(tool ready)" not in text, text
        listed = {t.name: t.description or "" for t in (await holder.list_tools()).tools}
        assert WAITING in " ".join(listed["claim"].split()).lower()  # one policy on waiting
        assert "use another key" in " ".join(listed["acquire_lock"].split())


async def test_replies_are_compact_and_say_the_time_left(live_server: LiveServer) -> None:
    item(live_server, "x")
    async with three(live_server) as (holder, _, boss):
        result = await holder.call_tool("claim", {"item_id": "x", "ttl_ms": 60_000})
        text = text_of(result)
        assert json.loads(text) == result.structured_content
        assert "\n" not in text and '": ' not in text and ', "' not in text
        lease = json.loads(text)["lease"]
        assert 0 < lease["expires_in_ms"] <= 60_000 and lease["expires_at"] > 0
        shown = await call(boss, "show_item", item_id="x")
        assert 0 < shown["lease"]["expires_in_ms"] <= 60_000
        tools = {t.name: t for t in (await holder.list_tools()).tools}
        schema = tools["claim"].output_schema or {}
        lease_schema = json.dumps(schema)
        assert "expires_in_ms" in lease_schema
