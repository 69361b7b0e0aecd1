"""``tenure dispatch``: an agent process under a detached supervisor, against a real server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from procs import Shell, alive, wait_for

if TYPE_CHECKING:
    from conftest import LiveServer

# The agent: records its environment and pid, reports SIGTERM, then does what $MODE says.
AGENT = r"""
import json, os, signal, sys, time, urllib.request
out = sys.argv[1]
def on_term(*_):
    open(out + ".term", "w").write("term")
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
env = {k: v for k, v in os.environ.items() if k.startswith("TENURE_")}
json.dump({"env": env, "pid": os.getpid()}, open(out + ".tmp", "w"))
os.rename(out + ".tmp", out)
mode = os.environ.get("MODE", "sleep")
if mode == "complete":
    body = json.dumps({"epoch": int(env["TENURE_EPOCH"]), "result": {"ok": True}}).encode()
    req = urllib.request.Request(
        env["TENURE_URL"] + "/v1/items/" + env["TENURE_ITEM"] + "/complete", body,
        {"Authorization": "Bearer " + env["TENURE_TOKEN"], "Content-Type": "application/json"},
    )
    urllib.request.urlopen(req).read()
    time.sleep(0.5)
    sys.exit(0)
if mode == "exit":
    sys.exit(7)
time.sleep(60)
"""


@pytest.fixture
def alice(shell: Callable[..., Shell]) -> Shell:
    return shell("alice")


@pytest.fixture
def http(live_server: LiveServer, alice: Shell) -> Iterator[httpx.Client]:
    with live_server.http(alice.token) as client:
        yield client


def new_item(http: httpx.Client, item_id: str) -> None:
    assert http.post("/v1/items", json={"id": item_id, "title": item_id}).status_code == 201


def view(http: httpx.Client, item_id: str) -> dict[str, Any]:
    reply = http.get(f"/v1/items/{item_id}")
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def dispatch(user: Shell, tmp: Path, item_id: str, *opts: str, mode: str = "sleep") -> Any:
    out = tmp / f"{item_id}.json"
    cmd = (sys.executable, "-c", AGENT, str(out))
    doc = user.json("dispatch", item_id, "--agent", "bot", *opts, "--", *cmd, MODE=mode)
    return doc, out


def test_agent_sees_its_token_and_epoch_and_the_claim_is_kept_alive(
    alice: Shell, http: httpx.Client, live_server: LiveServer, tmp_path: Path
) -> None:
    new_item(http, "fix")
    doc, out = dispatch(alice, tmp_path, "fix", "--ttl", "2s")
    assert doc["agent"]["name"] == "alice/bot" and set(doc["agent"]) == {"name", "token_id"}
    assert Path(doc["log"]).exists()
    seen = wait_for(lambda: out.exists() and json.loads(out.read_text()))
    env = seen["env"]
    assert env["TENURE_ITEM"] == "fix" and int(env["TENURE_EPOCH"]) == doc["lease"]["token"]
    assert env["TENURE_URL"] == live_server.url and env["TENURE_AGENT"] == "alice/bot"
    assert env["TENURE_SESSION"] == doc["lease"]["session"]  # the agent's own session
    assert env["TENURE_SESSION"].startswith("agent:")
    # the secret went to the agent only; its id (to revoke it) is shown
    assert env["TENURE_TOKEN"] not in json.dumps(doc)
    assert env["TENURE_TOKEN"].startswith(f"tnr_{doc['agent']['token_id']}_")
    assert set(env) == {
        "TENURE_URL", "TENURE_TOKEN", "TENURE_SESSION", "TENURE_AGENT", "TENURE_ITEM",
        "TENURE_EPOCH",
    }  # fmt: skip
    with live_server.http(env["TENURE_TOKEN"]) as agent:
        assert agent.get("/v1/me").json()["principal"]["name"] == "alice/bot"

    time.sleep(3.5)  # well past the 2 s TTL: only the supervisor's heartbeat keeps it
    state = view(http, "fix")
    assert (state["lease_state"], state["item"]["assignee"]) == ("live", "alice/bot")

    again = alice("dispatch", "fix", "--", "true")
    assert again.returncode == 3 and again.stdout == ""
    assert "held by alice/bot" in again.stderr

    os.kill(doc["supervisor_pid"], signal.SIGKILL)  # the supervisor dies: its agent too
    wait_for(lambda: not alive(seen["pid"]), timeout=5)
    wait_for(lambda: view(http, "fix")["lease_state"] == "lapsed", timeout=8)
    assert view(http, "fix")["item"]["assignee"] == "alice/bot"  # the edge stays


def test_agent_that_completes_the_item_is_left_alone(
    alice: Shell, http: httpx.Client, tmp_path: Path
) -> None:
    new_item(http, "done-by-agent")
    doc, _ = dispatch(alice, tmp_path, "done-by-agent", "--ttl", "5s", mode="complete")
    wait_for(lambda: not alive(doc["supervisor_pid"]))
    state = view(http, "done-by-agent")
    assert state["item"]["status"] == "done" and state["item"]["result"] == {"ok": True}
    reasons = [t["reason"] for t in state["transfers"]]
    assert reasons == ["claimed", "completed"]
    assert "command ended with status 0" in Path(doc["log"]).read_text()


# An agent that uses the CLI: as the agent (TENURE_TOKEN), in its session (TENURE_SESSION), with
# the epoch it was handed (TENURE_EPOCH) since it remembers none of its own.
CLI_AGENT = (
    'tenure() {{ "{python}" -m tenure.cli "$@"; }}; '
    'tenure claim "$TENURE_ITEM" --json > "{out}.claim" && '
    'tenure progress "$TENURE_ITEM" "half way" --percent 50 && '
    'tenure complete "$TENURE_ITEM" --result \'{{"ok": true}}\' > "{out}.done" 2>&1'
)


def test_an_agent_completes_its_item_with_the_cli(
    alice: Shell, http: httpx.Client, tmp_path: Path
) -> None:
    new_item(http, "by-cli")
    out = tmp_path / "agent"
    script = CLI_AGENT.format(python=sys.executable, out=out)
    doc = alice.json("dispatch", "by-cli", "--ttl", "5s", "--", "sh", "-c", script)
    wait_for(lambda: not alive(doc["supervisor_pid"]), timeout=30)
    log = Path(doc["log"]).read_text()
    assert "command ended with status 0" in log, log
    claimed = json.loads(Path(f"{out}.claim").read_text())  # its own session: renewed
    assert claimed["lease"]["token"] == doc["lease"]["token"]
    assert claimed["lease"]["renewals"] >= 1
    assert Path(f"{out}.done").read_text().strip() == "by-cli: done"
    state = view(http, "by-cli")
    assert state["item"]["status"] == "done" and state["item"]["result"] == {"ok": True}
    assert state["item"]["progress"]["message"] == "half way"
    assert [t["reason"] for t in state["transfers"]] == ["claimed", "completed"]


def test_a_dispatch_whose_supervisor_was_killed_is_dispatched_again(
    alice: Shell, http: httpx.Client, live_server: LiveServer, tmp_path: Path, shell: Any
) -> None:
    new_item(http, "orphan")
    first, out = dispatch(alice, tmp_path, "orphan", "--ttl", "2s")  # an agent that sleeps
    seen = wait_for(lambda: out.exists() and json.loads(out.read_text()))
    dead_token = seen["env"]["TENURE_TOKEN"]
    # a machine crash: kill -9 of the supervisor and of the agent's process group
    os.kill(first["supervisor_pid"], signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(seen["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(seen["pid"]) and not alive(first["supervisor_pid"]), timeout=5)

    # nobody cleans up: the claim lapses, and the dead agent's token ends with it (the server's
    # reaper revokes it within a second)
    wait_for(lambda: view(http, "orphan")["lease_state"] == "lapsed", timeout=8)
    with live_server.http(dead_token) as dead:
        wait_for(lambda: dead.get("/v1/me").status_code == 401, timeout=3)
    # the dispatcher's queue and briefing say so
    row = next(x for x in alice("queue").stdout.splitlines() if x.startswith("orphan"))
    assert "alice/bot" in row and "lapsed" in row
    assert [v["item"]["id"] for v in alice.json("brief")["lapsed"]] == ["orphan"]

    again = alice("dispatch", "orphan", "--", "true")
    assert (again.returncode, again.stdout) == (3, "")
    assert "assigned to alice/bot (lease expired)" in again.stderr
    assert "dispatch with --takeover --reason … to dispatch it again" in again.stderr
    no_reason = alice("dispatch", "orphan", "--takeover", "--", "true")
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr
    stranger = shell("bob")("dispatch", "orphan", "--takeover", "--reason", "mine", "--", "true")
    assert stranger.returncode == 1 and "may not take item 'orphan' over" in stranger.stderr

    # dispatched again, with a reason, to a new agent that completes the item with the CLI
    script = CLI_AGENT.format(python=sys.executable, out=tmp_path / "fixer")
    second = alice.json(
        "dispatch", "orphan", "--takeover", "--reason", "its supervisor died", "--agent",
        "fixer", "--ttl", "5s", "--", "sh", "-c", script,
    )  # fmt: skip
    assert second["item"]["assignee"] == "alice/fixer"
    assert second["lease"]["token"] > first["lease"]["token"]
    wait_for(lambda: not alive(second["supervisor_pid"]), timeout=30)
    assert "command ended with status 0" in Path(second["log"]).read_text()
    state = view(http, "orphan")
    assert state["item"]["status"] == "done" and state["item"]["result"] == {"ok": True}
    transfers = [
        (t["reason"], t["from"], t["to"], t["actor"], t["note"]) for t in state["transfers"]
    ]
    assert transfers == [
        ("claimed", None, "alice/bot", "alice", None),
        ("taken_over", "alice/bot", "alice/fixer", "alice", "its supervisor died"),
        ("completed", "alice/fixer", None, "alice/fixer", None),
    ]
    assert alice("queue").stdout.strip() == "nothing assigned"


def test_claim_is_released_when_the_agent_exits(
    alice: Shell, http: httpx.Client, tmp_path: Path
) -> None:
    new_item(http, "gave-up")
    doc, _ = dispatch(alice, tmp_path, "gave-up", mode="exit")
    wait_for(lambda: not alive(doc["supervisor_pid"]))
    state = view(http, "gave-up")
    assert (state["item"]["status"], state["item"]["assignee"]) == ("open", None)
    assert [t["reason"] for t in state["transfers"]] == ["claimed", "released"]
    assert "command ended with status 7" in Path(doc["log"]).read_text()


def test_lost_claim_stops_the_agent(
    alice: Shell, http: httpx.Client, live_server: LiveServer, tmp_path: Path
) -> None:
    new_item(http, "stuck")
    doc, out = dispatch(alice, tmp_path, "stuck", "--ttl", "3s", "--grace", "5s")
    seen = wait_for(lambda: out.exists() and json.loads(out.read_text()))
    with live_server.http(live_server.admin_token) as admin:
        reply = admin.post("/v1/items/stuck/force-release", json={"reason": "wedged"})
        assert reply.status_code == 200, reply.text
    wait_for(lambda: not alive(seen["pid"]), timeout=10)
    assert Path(str(out) + ".term").exists()  # SIGTERM, not SIGKILL: it got to clean up
    wait_for(lambda: not alive(doc["supervisor_pid"]))
    assert "claim lost" in Path(doc["log"]).read_text()


def test_a_claim_that_lapsed_while_the_supervisor_started_is_not_worked(
    http: httpx.Client, live_server: LiveServer, tmp_path: Path
) -> None:
    new_item(http, "late")
    granted = http.post("/v1/items/late/dispatch", json={"agent": "slow", "ttl_ms": 1000})
    assert granted.status_code == 200, granted.text
    body = granted.json()
    marker = tmp_path / "ran"
    orders = {
        "url": live_server.url, "token": body["agent"]["token"], "agent": "alice/slow",
        "item": "late", "session": "agent:test", "epoch": body["lease"]["token"], "ttl_ms": 1000,
        "expires_at": body["lease"]["expires_at"], "grace_s": 1.0,
        "cmd": ["sh", "-c", f"touch {marker}"],
    }  # fmt: skip
    wait_for(lambda: view(http, "late")["lease_state"] == "lapsed", timeout=5)
    supervisor = subprocess.run(
        [sys.executable, "-m", "tenure.supervise.detached"],
        input=json.dumps(orders), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert supervisor.returncode == 1, supervisor.stderr
    assert "claim lost before the command started" in supervisor.stderr
    assert not marker.exists()  # CMD never ran
    assert view(http, "late")["item"]["assignee"] == "alice/slow"  # nothing else changed


def test_bad_input_changes_nothing(alice: Shell, http: httpx.Client) -> None:
    new_item(http, "calm")
    assert alice("dispatch", "calm").returncode == 2  # no command
    assert alice("dispatch", "calm", "--ttl", "soon", "--", "true").returncode == 2
    missing = alice("dispatch", "nope", "--", "true")
    assert missing.returncode == 5 and "not found" in missing.stderr
    state = view(http, "calm")
    assert (state["item"]["status"], state["transfers"]) == ("open", [])


def supervisor_of(parent: int) -> int | None:
    """The pid of the ``tenure.supervise.detached`` process ``parent`` started, once it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == parent and b"tenure.supervise.detached" in (entry / "cmdline").read_bytes():
                return int(entry.name)
    return None


def test_a_supervisor_slower_to_start_than_the_ttl_still_works_the_claim(
    alice: Shell, http: httpx.Client, tmp_path: Path
) -> None:
    """A loaded machine: the supervisor is stopped for three ttls as it starts; ``tenure
    dispatch`` holds the claim meanwhile, so the agent runs and completes its item."""
    new_item(http, "slow-start")
    out = tmp_path / "slow-start.json"
    proc = alice.popen(
        "dispatch", "slow-start", "--agent", "bot", "--ttl", "1s", "--json",
        "--", sys.executable, "-c", AGENT, str(out), MODE="complete",
    )  # fmt: skip
    supervisor = wait_for(lambda: supervisor_of(proc.pid), timeout=10, what="the supervisor")
    os.kill(supervisor, signal.SIGSTOP)
    time.sleep(3)
    os.kill(supervisor, signal.SIGCONT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert json.loads(stdout)["supervisor_pid"] == supervisor
    wait_for(lambda: view(http, "slow-start")["item"]["status"] == "done", timeout=20)
    assert [t["reason"] for t in view(http, "slow-start")["transfers"]] == ["claimed", "completed"]


def test_a_command_that_cannot_start_fails_the_dispatch_and_frees_the_item(
    alice: Shell, http: httpx.Client, tmp_path: Path
) -> None:
    new_item(http, "no-command")
    done = alice("dispatch", "no-command", "--agent", "bot", "--", str(tmp_path / "missing"))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "could not be started" in done.stderr and "claim is released" in done.stderr
    state = view(http, "no-command")
    assert (state["item"]["status"], state["item"]["assignee"]) == ("open", None)
    assert [t["reason"] for t in state["transfers"]] == ["claimed", "released"]
