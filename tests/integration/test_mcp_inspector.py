"""A real third-party MCP client, the MCP Inspector CLI, against ``/mcp`` on a real server
(streamable HTTP with an ``Authorization`` header) and against ``tenure mcp`` (stdio). The tests
read the JSON it prints (a tool error is a result with ``isError``), not only its exit code."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _mcp import TOOLS
from _mcp_inspector import Inspector, install, tool_call

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.slow
TENURE = str(Path(sys.executable).parent / "tenure")


@pytest.fixture(scope="session")
def inspector_cache() -> Path:
    return install()


@pytest.fixture
def inspector(inspector_cache: Path, tmp_path: Path) -> Inspector:
    home = tmp_path / "inspector-home"
    home.mkdir()
    return Inspector(home, inspector_cache)


def claim_args(item_id: str) -> tuple[str, ...]:
    return ("--method", "tools/call", "--tool-name", "claim", "--tool-arg", f"item_id={item_id}")


def test_over_http_with_an_authorization_header(
    live_server: LiveServer, inspector: Inspector
) -> None:
    url = f"{live_server.url}/mcp"
    ann = f"Authorization: Bearer {live_server.token_for('ann/agent-1')}"
    bob = f"Authorization: Bearer {live_server.token_for('bob/agent-1')}"
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")

    listed = inspector.run(url, "--transport", "http", "--header", ann, "--method", "tools/list",
                           "--strict")  # fmt: skip
    assert listed.code == 0, listed.err  # --strict: no error-severity schema problem
    tools = listed.json()["tools"]
    assert {t["name"] for t in tools} == TOOLS
    assert all(t["outputSchema"]["type"] == "object" for t in tools)

    won = inspector.run(url, "--transport", "http", "--header", ann, *claim_args("login"))
    assert won.code == 0, won.err
    claim = won.json()["structuredContent"]
    assert (claim["lease"]["holder"], claim["item"]["assignee"]) == ("ann/agent-1",) * 2
    assert claim["epoch"] == claim["lease"]["token"] > 0
    held_in = claim["lease"]["session"]  # the Mcp-Session-Id of the Inspector's connection
    assert held_in.startswith("mcp-")

    lost = inspector.run(url, "--transport", "http", "--header", bob, *claim_args("login"))
    reply = lost.json()
    assert reply["isError"] is True
    assert reply["content"][0]["text"].startswith(
        f"lease_held: items/login held by ann/agent-1 (session {held_in})"
    )

    anonymous = inspector.run(url, "--transport", "http", *claim_args("login"))
    assert anonymous.code != 0 and anonymous.out == ""
    assert "auth" in anonymous.err.lower()


def test_over_stdio(live_server: LiveServer, inspector: Inspector) -> None:
    token = live_server.token_for("cy/agent-1")
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("write docs", id="docs")
    env = ("-e", f"TENURE_URL={live_server.url}", "-e", f"TENURE_TOKEN={token}")
    won = inspector.run(*env, *claim_args("docs"), "--tool-arg", "task=docs", "--", TENURE, "mcp")
    assert won.code == 0, won.err
    lease = won.json()["structuredContent"]["lease"]
    assert (lease["key"], lease["holder"], lease["task"]) == ("items/docs", "cy/agent-1", "docs")
    assert lease["session"].startswith("mcp:")  # the process's own session

    missing = inspector.run(*env, *claim_args("nope"), "--", TENURE, "mcp")
    reply = missing.json()
    assert reply["isError"] is True
    assert reply["content"][0]["text"].startswith("not_found: no item 'nope'")


def test_reassign_and_follow_ups_over_http(live_server: LiveServer, inspector: Inspector) -> None:
    """The authority's reassign, the revoked advice and a completion with follow-ups, each
    through the Inspector (its own connection each time, as a CLI run is)."""
    url = f"{live_server.url}/mcp"
    tokens = {name: live_server.token_for(name) for name in ("ann/agent-1", "bob/agent-1")}
    tokens["root"] = live_server.admin_token

    def as_(name: str) -> tuple[str, ...]:
        return (url, "--transport", "http", "--header", f"Authorization: Bearer {tokens[name]}")

    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("fix login", id="login")
    listed = inspector.run(*as_("root"), "--method", "tools/list", "--strict")
    assert listed.code == 0, listed.err
    reassign = next(t for t in listed.json()["tools"] if t["name"] == "reassign")
    assert set(reassign["inputSchema"]["required"]) == {"item_id", "to", "reason"}

    assert inspector.run(*as_("ann/agent-1"), *claim_args("login")).code == 0
    ended = inspector.run(*as_("root"), *tool_call("force_release", item_id="login",
                                                  reason="wrong approach"))  # fmt: skip
    assert ended.json()["structuredContent"]["item"]["revoked"] is True
    refused = inspector.run(*as_("ann/agent-1"), *claim_args("login")).json()
    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    assert text.startswith("assigned_to_other: items/login assigned to ann/agent-1, its claim "
                           "revoked")  # fmt: skip
    assert "Do not claim it again" in text
    brief = inspector.run(*as_("ann/agent-1"), *tool_call("briefing")).json()
    assert "Do not claim it again" in brief["structuredContent"]["advice"][0]

    moved = inspector.run(*as_("root"), *tool_call("reassign", item_id="login", to="bob/agent-1",
                                                   reason="ann was stopped"))  # fmt: skip
    assert moved.code == 0, moved.err
    assert moved.json()["structuredContent"]["item"]["assignee"] == "bob/agent-1"
    bob = as_("bob/agent-1")
    claim = inspector.run(*bob, *claim_args("login")).json()["structuredContent"]
    assert claim["item"]["assignee"] == "bob/agent-1"  # plainly, no takeover
    done = inspector.run(*bob, *tool_call("complete", item_id="login", epoch=str(claim["epoch"]),
                                          follow_ups='[{"title": "add a test"}]'))  # fmt: skip
    assert done.code == 0, done.err
    reply = done.json()["structuredContent"]
    assert reply["item"]["status"] == "done"
    assert [(f["title"], f["parent"]) for f in reply["follow_ups"]] == [("add a test", "login")]


def test_reassign_over_stdio(live_server: LiveServer, inspector: Inspector) -> None:
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        admin.items.create("write docs", id="docs")
    env = ("-e", f"TENURE_URL={live_server.url}", "-e", f"TENURE_TOKEN={live_server.admin_token}")
    call = tool_call("reassign", item_id="docs", to="cy/agent-1", reason="cy writes docs")
    live_server.token_for("cy/agent-1")
    moved = inspector.run(*env, *call, "--", TENURE, "mcp")
    assert moved.code == 0, moved.err
    assert moved.json()["structuredContent"]["item"]["assignee"] == "cy/agent-1"
    nobody = tool_call("reassign", item_id="docs", to="nobody", reason="x")
    missing = inspector.run(*env, *nobody, "--", TENURE, "mcp").json()
    assert missing["isError"] is True
    assert missing["content"][0]["text"].startswith("not_found: to: no principal named 'nobody'")


def test_the_queue_tools_and_lapsed_work(live_server: LiveServer, inspector: Inspector) -> None:
    """list_items, update_item and cancel_item, and a lapsed claim in ready, through the
    Inspector over HTTP and stdio."""
    url = f"{live_server.url}/mcp"
    boss = live_server.token_for("boss", kind="human", roles=("supervisor",))
    http = (url, "--transport", "http", "--header", f"Authorization: Bearer {boss}")
    stdio = ("-e", f"TENURE_URL={live_server.url}", "-e", f"TENURE_TOKEN={boss}")
    with tenure.Client(live_server.url, token=live_server.token_for("agent1")) as agent1:
        agent1.items.create("fix login", id="login", labels=["auth"])
        agent1.items.create("write docs", id="docs")
        agent1.items.claim("login", ttl_ms=1000)
    time.sleep(1.1)  # agent1's claim lapses

    ready = inspector.run(*http, *tool_call("ready")).json()["structuredContent"]
    assert [i["id"] for i in ready["items"]] == ["docs"]
    assert [(x["item"]["id"], x["holder"]) for x in ready["lapsed"]] == [("login", "agent1")]
    listed = inspector.run(*http, *tool_call("list_items", label="auth"))
    assert [i["id"] for i in listed.json()["structuredContent"]["items"]] == ["login"]
    edited = inspector.run(*stdio, *tool_call("update_item", item_id="docs", priority="0"),
                           "--", TENURE, "mcp")  # fmt: skip
    assert edited.code == 0, edited.err
    assert edited.json()["structuredContent"]["item"]["priority"] == 0
    bad = inspector.run(*http, *tool_call("update_item", item_id="docs", owner="x")).json()
    assert bad["isError"] is True
    assert bad["content"][0]["text"].startswith("invalid_request: ")
    gone = inspector.run(*stdio, *tool_call("cancel_item", item_id="login", reason="obsolete"),
                         "--", TENURE, "mcp")  # fmt: skip
    assert gone.code == 0, gone.err
    assert gone.json()["structuredContent"]["item"]["status"] == "cancelled"
