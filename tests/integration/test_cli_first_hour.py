"""A newcomer's first hour with the ``tenure`` command, run for real against a real server: the
obvious agent script of ``tenure dispatch``, connection and token errors that say what to do,
durations in the units typed, ``tenure events`` from the end of the log, and output that does
not contradict itself or cut what the user must copy.

The CLI does not depend on the backend: these run on SQLite only.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import tenure
from procs import Shell, alive, free_port, wait_for

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)

#: a PATH without this installation's ``tenure``: a virtualenv that was never activated
BARE_PATH = "/usr/bin:/bin"


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo")


@pytest.fixture
def jos(jo: Shell) -> Iterator[tenure.Client]:
    with tenure.Client(jo.url, token=jo.token) as client:
        yield client


def ok(user: Shell, *args: str, **env: str) -> str:
    """``tenure ARGS…`` (with ``env``): exit 0, nothing on stderr; its stdout."""
    done = user(*args, **env)
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    assert done.stderr == "", done.stderr
    return done.stdout


def doc(user: Shell, *args: str, **env: str) -> Any:
    """``tenure ARGS… --json``: exit 0 and one JSON document on stdout."""
    return json.loads(ok(user, *args, "--json", **env))


def fails(user: Shell, code: int, *args: str, **env: str) -> str:
    """``tenure ARGS…`` exits ``code`` with nothing on stdout; its stderr."""
    done = user(*args, **env)
    assert done.returncode == code, (args, done.returncode, done.stdout, done.stderr)
    assert done.stdout == "", done.stdout
    return done.stderr


def shared_state(tmp_path: Path) -> dict[str, str]:
    """The user's state directory where a dispatched agent (whose environment keeps no
    ``TENURE_*`` of the user's) finds it too: under ``XDG_STATE_HOME``, as without overrides."""
    xdg = tmp_path / "xdg-state"
    return {"XDG_STATE_HOME": str(xdg), "TENURE_STATE_DIR": str(xdg / "tenure")}


# 1. the dispatched agent's environment is enough --------------------------------------------
def test_the_obvious_agent_script_completes_its_item(
    jo: Shell, jos: tenure.Client, tmp_path: Path
) -> None:
    """`tenure progress/complete "$TENURE_ITEM"` with no flags, from a PATH without tenure on
    it, and although the user's CLI remembers an older epoch of the same item."""
    env = shared_state(tmp_path)
    jos.items.create("Write the docs", id="docs")
    assert doc(jo, "claim", "docs", "--ttl", "1s", **env)["lease"]["token"] == 1  # remembered
    wait_for(lambda: jos.items.get("docs").lease_state == "lapsed", timeout=10)
    script = 'tenure progress "$TENURE_ITEM" "half way" && tenure complete "$TENURE_ITEM"'
    done = jo.json(
        "dispatch", "docs", "--takeover", "--reason", "jo is away", "--agent", "bot",
        "--", "sh", "-c", script, PATH=BARE_PATH, **env,
    )  # fmt: skip
    assert done["lease"]["token"] == 2
    wait_for(lambda: not alive(done["supervisor_pid"]), timeout=30)
    log = Path(done["log"]).read_text()
    assert "docs: done" in log and "command ended with status 0\n" in log, log
    view = jos.items.get("docs")
    assert view.item.status == "done" and view.item.progress["message"] == "half way"


def test_a_command_that_ends_without_completing_is_reported(jo: Shell, jos: tenure.Client) -> None:
    jos.items.create("Review", id="review")
    done = jo.json("dispatch", "review", "--agent", "lazy", "--", "true")
    wait_for(lambda: not alive(done["supervisor_pid"]), timeout=30)
    log = Path(done["log"]).read_text()
    said = "command ended with status 0 but did not complete items/review: it goes back to open"
    assert said in log, log
    assert jos.items.get("review").item.status == "open"
    shown = ok(jo, "queue")
    assert "nothing assigned" in shown
    assert re.search(
        r"^  review: the command of jo/lazy ended with status 0 without completing it \(",
        shown,
        re.MULTILINE,
    ), shown
    returned = doc(jo, "queue")["left_open"]
    assert [(x["item"], x["agent"]) for x in returned] == [("review", "jo/lazy")]
    # an agent that releases its item itself chose to: nothing to report
    jos.items.create("Try", id="try")
    script = 'tenure release "$TENURE_ITEM"'
    done = jo.json("dispatch", "try", "--agent", "polite", "--", "sh", "-c", script)
    wait_for(lambda: not alive(done["supervisor_pid"]), timeout=30)
    log = Path(done["log"]).read_text()
    assert "try: released" in log and "did not complete" not in log, log
    assert [x["item"] for x in doc(jo, "queue")["left_open"]] == ["review"]
    # claimed again, it is no longer reported
    doc(jo, "claim", "review")
    assert doc(jo, "queue")["left_open"] == []


# 2. connection errors name the URL and say what to do ---------------------------------------
def test_connection_and_token_errors_say_what_to_do(
    jo: Shell, live_server: LiveServer, tmp_path: Path
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    down = Shell(nowhere, jo.token, tmp_path / "down")
    said = fails(down, 1, "whoami")
    assert said == (
        f"tenure: cannot reach tenure at {nowhere}: is `tenure serve` running? "
        "(connection refused)\n"
    )

    newcomer = Shell(live_server.url, None, tmp_path / "newcomer")
    said = fails(newcomer, 1, "whoami")
    assert f"no token for {live_server.url}" in said
    assert f"`tenure login --url {live_server.url}`" in said

    said = fails(newcomer, 1, "whoami", TENURE_TOKEN="tnr_000000000000_nope")
    assert "refused the token from $TENURE_TOKEN" in said and "tenure login" not in said

    said = fails(newcomer, 1, "login", "--url", nowhere, "--token", "tnr_000000000000_nope")
    assert said.startswith(f"tenure: cannot reach tenure at {nowhere}: "), said
    said = fails(newcomer, 1, "login", "--token", "tnr_000000000000_nope")
    assert "refused the token from `tenure login --token`" in said

    # logged in as 127.0.0.1: localhost, or a trailing slash, finds the same login
    ok(newcomer, "login", "--token", str(jo.token))
    port = live_server.url.rsplit(":", 1)[1]
    for spelling in (f"http://localhost:{port}", f"{live_server.url}/"):
        assert doc(newcomer, "--url", spelling, "whoami")["name"] == "jo"
    # $TENURE_TOKEN is used whatever the spelling of --url
    stranger = Shell(live_server.url, jo.token, tmp_path / "stranger")
    assert doc(stranger, "--url", f"http://localhost:{port}", "whoami")["name"] == "jo"
    said = fails(newcomer, 1, "--token", "tnr_000000000000_nope", "whoami")
    assert "refused the token from --token" in said


# 3. durations in the units typed ------------------------------------------------------------
def test_durations_are_refused_in_the_units_typed(jo: Shell, jos: tenure.Client) -> None:
    jos.items.create("Deploy", id="deploy")
    said = fails(jo, 2, "claim", "deploy", "--ttl", "1h")
    assert said.startswith("tenure: --ttl 1h is too long: at most 10m (policy max_ttl). ")
    assert "`tenure extend ITEM 1h`" in said  # and how to hold it longer
    said = fails(jo, 2, "lock", "acquire", "jobs/a", "--ttl", "3600")
    assert said.startswith("tenure: --ttl 3600 is too long: at most 600s (policy max_ttl). ")
    assert "`tenure lock extend KEY 3600`" in said
    said = fails(jo, 2, "lock", "acquire", "jobs/a", "--ttl", "500ms")
    assert said == "tenure: --ttl 500ms is too short: at least 1000ms (policy min_ttl)\n"
    problem = json.loads(jo("claim", "deploy", "--ttl", "1h", "--json").stderr)
    assert (problem["field"], problem["minimum"], problem["maximum"]) == ("ttl_ms", 1000, 600_000)
    assert jos.items.get("deploy").item.status == "open"


# 4. tenure events from the end of the log ---------------------------------------------------
def test_events_show_the_latest_and_follow_from_now(jo: Shell, jos: tenure.Client) -> None:
    for n in range(30):
        jos.items.create(f"Item {n}", id=f"it{n}")
    every = jos.events(limit=1000)
    head = every[-1].id
    latest = doc(jo, "events")
    assert [e["id"] for e in latest["events"]] == [e.id for e in every[-20:]]
    assert latest["next"] == head
    assert [e["id"] for e in doc(jo, "events", "--limit", "3")["events"]] == [
        e.id for e in every[-3:]
    ]
    first = doc(jo, "events", "--from-start", "--limit", "5")["events"]
    assert [e["id"] for e in first] == [e.id for e in every[:5]]
    after = doc(jo, "events", "--since", str(every[-4].id))["events"]
    assert [e["id"] for e in after] == [e.id for e in every[-3:]]
    recent = doc(jo, "events", "--since", "10m", "--type", "item_created")["events"]
    assert len(recent) == 30
    assert "exclude each other" in fails(jo, 2, "events", "--from-start", "--after", "3")
    table = ok(jo, "events")
    assert "it29" in table and "it0 " not in table

    follow = jo.popen("events", "--follow", "--json")
    lines = reader(follow)
    try:  # new events until the follower shows one: the first it shows is new, not a replay
        seen = None
        for n in range(100):
            jos.items.create("Fresh", id=f"fresh{n}")
            try:
                seen = json.loads(lines.get(timeout=0.3))
                break
            except queue.Empty:
                continue
        assert seen is not None, "the follower showed nothing"
        assert seen["id"] > head and seen["type"] == "item_created", seen
        assert seen["key"].startswith("items/fresh")
    finally:
        follow.terminate()
        assert follow.wait(timeout=15) == 0


def reader(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


# 5. output that does not contradict itself, and is never cut ---------------------------------
def test_output_is_consistent_whole_and_without_trailing_spaces(
    jo: Shell, shell: Callable[..., Shell], jos: tenure.Client
) -> None:
    bob = shell("bob")
    ok(jo, "lock", "acquire", "jobs/nightly", "--ttl", "30s")
    ok(jo, "lock", "release", "jobs/nightly")
    shown = ok(jo, "lock", "show", "jobs/nightly")
    assert re.search(r"^state +released$", shown, re.MULTILINE) and "expires" not in shown

    jos.items.create("Ship it", id="ship")
    ok(jo, "claim", "ship", "--ttl", "5m")
    narrow = {"COLUMNS": "60"}
    said = fails(bob, 3, "claim", "ship", **narrow)
    assert said.count("\n") == 1 and " left" not in said, said  # one line, said once
    ok(jo, "complete", "ship")
    shown = ok(jo, "items", "show", "ship", **narrow)
    lease = next(x for x in shown.splitlines() if x.startswith("lease"))
    assert "expires" not in lease and "held by jo" not in lease.replace("was held by", "")
    for line in shown.splitlines():
        assert line == line.rstrip(), repr(line)
    assert "…" not in shown

    jos.items.create("Long one", id="a-rather-long-item-id-for-the-log-path")
    done = jo(
        "dispatch", "a-rather-long-item-id-for-the-log-path", "--agent",
        "an-agent-with-a-long-name", "--", "sleep", "1", **narrow,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    path = next(x for x in done.stdout.splitlines() if x.startswith("log"))[3:].strip()
    assert Path(path).is_file(), done.stdout
    assert all(line == line.rstrip() for line in done.stdout.splitlines())
    wait_for(lambda: "command ended" in Path(path).read_text(), timeout=30)
    shown = ok(jo, "items", "show", "a-rather-long-item-id-for-the-log-path", **narrow)
    assert "jo/an-agent-with-a-long-name" in shown and "…" not in shown


# 6. a refused dispatch creates no one, and its conflict is the dispatcher's ------------------
def test_a_refused_dispatch_is_the_dispatchers_conflict(
    jo: Shell, shell: Callable[..., Shell], jos: tenure.Client
) -> None:
    bob = shell("bob")
    jos.items.create("Taken", id="taken")
    ok(jo, "claim", "taken")
    said = fails(bob, 3, "dispatch", "taken", "--agent", "helper", "--", "true")
    assert "held by jo" in said
    conflicts = [e for e in jos.events(limit=1000) if e.type == "conflict"]
    assert [(e.actor, e.data.get("agent")) for e in conflicts] == [("bob", "bob/helper")]
    made = [e.holder for e in jos.events(limit=1000, type="principal_created")]
    assert "bob/helper" not in made
