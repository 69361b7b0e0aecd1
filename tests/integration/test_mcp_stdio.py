"""``tenure mcp`` launched as a subprocess by the SDK's stdio client, as a desktop agent
launches it: against a real server with ``TENURE_URL``/``TENURE_TOKEN``, and in direct mode on
the database. Each process is a session of its own (or ``TENURE_SESSION``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _mcp import TOOLS, call, refused
from mcp import Client, StdioServerParameters

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TENURE = str(Path(sys.executable).parent / "tenure")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def launched(*args: str, env: dict[str, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=TENURE, args=["mcp", *args], env=env)
    async with Client(params, read_timeout_seconds=30) as client:
        yield client


async def test_over_a_server_with_url_and_token(live_server: LiveServer) -> None:
    env = {"TENURE_URL": live_server.url, "TENURE_TOKEN": live_server.token_for("jo/agent-1")}
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")
        admin.acquire("deploy/prod", task="release-42")
    async with launched(env=env) as jo:
        assert {t.name for t in (await jo.list_tools()).tools} == TOOLS
        assert (await call(jo, "whoami"))["name"] == "jo/agent-1"
        claim = await call(jo, "claim", item_id="login", task="fix")
        await call(jo, "progress", item_id="login", epoch=claim["epoch"], message="half")
        done = await call(jo, "complete", item_id="login", epoch=claim["epoch"])
        assert done["item"]["status"] == "done"
        text = await refused(jo, "acquire_lock", "lease_held", key="deploy/prod")
        assert "held by root (session " in text and ", task release-42) until " in text


async def test_each_process_is_a_session(live_server: LiveServer) -> None:
    """Two agents launched with one token are two sessions; ``TENURE_SESSION`` names one."""
    env = {"TENURE_URL": live_server.url, "TENURE_TOKEN": live_server.token_for("jo/agent-1")}
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")
    async with launched(env=env) as a, launched(env={**env, "TENURE_SESSION": "jo-7"}) as b:
        sa = (await call(a, "whoami"))["session"]
        assert sa.startswith("mcp:") and (await call(b, "whoami"))["session"] == "jo-7"
        claim = await call(a, "claim", item_id="login", ttl_ms=5000)
        assert claim["lease"]["session"] == sa
        text = await refused(b, "claim", "lease_held", item_id="login")
        assert text.startswith(f"lease_held: items/login held by jo/agent-1 (session {sa}) ")
        await refused(b, "release", "not_holder", item_id="login")
        assert (await call(b, "heartbeat"))["renewed"] == []  # A's claim is not B's to renew
        assert [x["key"] for x in (await call(a, "heartbeat"))["renewed"]] == ["items/login"]
        released = await call(a, "release", item_id="login", epoch=claim["epoch"])
        assert released["released"] and released["item"]["status"] == "open"


async def test_a_bad_token_is_a_tool_error(live_server: LiveServer) -> None:
    env = {"TENURE_URL": live_server.url, "TENURE_TOKEN": "tnr_000000000000_" + "x" * 43}
    async with launched(env=env) as nobody:
        text = await refused(nobody, "ready", "unauthenticated")
    assert "token" in text


async def test_direct_mode_on_the_database(store_url: str) -> None:
    args = ("--db", store_url, "--principal", "cron/agent")
    async with launched(*args, env={}) as cron:
        await call(cron, "create_item", title="nightly", id="n1")
        claim = await call(cron, "claim", item_id="n1")
        assert claim["lease"]["holder"] == "cron/agent"
        assert claim["lease"]["session"] == (await call(cron, "whoami"))["session"] != ""
        assert (await call(cron, "heartbeat"))["renewed"][0]["key"] == "items/n1"
    store = tenure.open_store(store_url)
    try:
        assert tenure.Service(store).items.get("n1").item.assignee == "cron/agent"
    finally:
        store.close()


def test_direct_mode_needs_a_principal(tmp_path: Path) -> None:
    done = subprocess.run(
        [TENURE, "mcp", "--db", f"sqlite:///{tmp_path}/t.db"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "--principal" in done.stderr
    assert done.stdout == ""


async def test_reassign_revoked_advice_and_follow_ups(live_server: LiveServer) -> None:
    """The same rules through ``tenure mcp`` (the client backend): revoked, reassigned,
    completed with follow-ups."""
    env = {"TENURE_URL": live_server.url}
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")
    async with (
        launched(env={**env, "TENURE_TOKEN": live_server.token_for("jo/agent-1")}) as jo,
        launched(env={**env, "TENURE_TOKEN": live_server.admin_token}) as root,
    ):
        await call(jo, "claim", item_id="login")
        ended = await call(root, "force_release", item_id="login", reason="wrong approach")
        assert ended["item"]["revoked"] is True
        text = await refused(jo, "claim", "assigned_to_other", item_id="login")
        assert "its claim revoked" in text and "Do not claim it again" in text
        brief = await call(jo, "briefing")
        assert [v["lease_state"] for v in brief["lapsed"]] == ["revoked"]
        assert brief["advice"][0].startswith("login is revoked: an authority force-released "
                                             "your claim")  # fmt: skip
        queue = await call(root, "queue", principal="jo/agent-1")
        assert "Do not claim it again" in queue["advice"][0]

        moved = await call(root, "reassign", item_id="login", to="jo/agent-1", reason="go on")
        assert (moved["item"]["assignee"], moved["item"]["revoked"]) == ("jo/agent-1", False)
        epoch = (await call(jo, "claim", item_id="login"))["epoch"]
        sub = await call(jo, "create_item", title="part", parent="login", parent_epoch=epoch)
        done = await call(jo, "complete", item_id="login", epoch=epoch, op_id="done-1",
                          follow_ups=[{"title": "add a test", "priority": 0}])  # fmt: skip
        (follow_up,) = done["follow_ups"]
        assert (follow_up["title"], follow_up["priority"], follow_up["parent"]) == (
            "add a test", 0, "login",
        )  # fmt: skip
        again = await call(jo, "complete", item_id="login", epoch=epoch, op_id="done-1",
                           follow_ups=[{"title": "add a test", "priority": 0}])  # fmt: skip
        assert again["duplicate"] and again["follow_ups"][0]["id"] == follow_up["id"]
        ready = {i["id"] for i in (await call(jo, "ready"))["items"]}
        assert ready == {sub["item"]["id"], follow_up["id"]}
