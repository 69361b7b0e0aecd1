"""MCP tools refuse a JSON value nested deeper than the bound (or holding a NUL) as any other
path does, naming the field, and the listings keep answering."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from _mcp import Agent, call, in_process, refused

import tenure
from tenure.core.validate import MAX_JSON_DEPTH

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def agent(make_service: Callable[..., tenure.Service], clock: tenure.FakeClock) -> Agent:
    clock.set(int(time.time() * 1000))
    return in_process(make_service())


def nested(levels: int) -> Any:
    value: Any = 1
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


DEEP = {"d": nested(MAX_JSON_DEPTH)}


async def keys_and_metas(client: Any) -> list[tuple[str, Any]]:
    return [(x["key"], x["meta"]) for x in (await call(client, "list_leases"))["leases"]]


async def test_deep_json_is_refused_by_the_tools_and_listings_still_work(agent: Agent) -> None:
    async with agent("jo") as jo:
        await call(jo, "acquire_lock", key="jobs/ok", meta={"m": nested(MAX_JSON_DEPTH - 1)})
        await call(jo, "create_item", title="work", id="w")
        epoch = (await call(jo, "claim", item_id="w"))["epoch"]
        before = await keys_and_metas(jo)
        for tool, args, field in [
            ("acquire_lock", {"key": "jobs/deep", "meta": {"m": nested(MAX_JSON_DEPTH)}}, "meta"),
            ("acquire_lock", {"key": "jobs/deep", "meta": {"m": nested(150)}}, "meta"),
            ("acquire_lock", {"key": "jobs/nul", "meta": {"m": "\x00"}}, "meta"),
            ("progress", {"item_id": "w", "epoch": epoch, "message": "m", "data": DEEP}, "data"),
            ("complete", {"item_id": "w", "epoch": epoch, "result": nested(100)}, "result"),
        ]:
            text = await refused(jo, tool, "invalid_request", **args)
            assert field in text, text
        assert await keys_and_metas(jo) == before  # (each call renews them: a heartbeat)
        shown = await call(jo, "show_item", item_id="w")
        assert shown["item"]["status"] == "in_progress" and shown["item"]["progress"] is None
