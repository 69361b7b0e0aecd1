"""The item verbs, ``items add|ls|show``, ``events`` and ``heartbeat``: the ``tenure`` command
against a real server, in table and ``--json`` form, with the exit code of each failure
(docs/cli.md: 2 invalid, 3 conflict, 4 lost or stale, 5 not found).

Each test walks one story with several assertions, and setup or checks that are not about the
CLI go through the Python client. A subprocess costs about half a second of CPU, so jo and bob
run the CLI's entry function in the test's process (``procs.cli_inproc``); some calls in each
story, ``events --follow`` and the other users' calls are real ``tenure`` subprocesses.
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tenure
from procs import Shell, doc, fails, ok, remembered

CLOCK = r"(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d"  # the date when not today
SESSION = r"cli:[\w.-]+:[0-9a-f]{8}"  # the CLI's own session


# helpers ------------------------------------------------------------------------------------


def client_of(user: Shell) -> tenure.Client:
    return tenure.Client(user.url, token=user.token)


def wait_for(check: Callable[[], Any], timeout: float = 15, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def state_of(client: tenure.Client, item_id: str) -> tuple[dict[str, Any], int]:
    """What bad input must not change: the item with its lease, and the number of events."""
    return client.items.get(item_id).to_dict(), len(client.events(limit=1000))


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo", inproc=True)


@pytest.fixture
def bob(shell: Callable[..., Shell]) -> Shell:
    return shell("bob", inproc=True)


@pytest.fixture
def jos(jo: Shell) -> Iterator[tenure.Client]:
    """jo's Python client, for setup and checks."""
    with client_of(jo) as client:
        yield client


# items add | ls | show, ready ---------------------------------------------------------------
def test_add_list_show_and_ready(jo: Shell, jos: tenure.Client) -> None:
    out = ok(
        jo, "items", "add", "Fix the [flaky] test", "--id", "fix-1", "--priority", "1",
        "--label", "ci", "--label", "flaky", "--body", "it fails on tuesdays",
    )  # fmt: skip
    assert out.strip() == "added fix-1: Fix the [flaky] test"  # no rich markup eaten
    notes = doc(jo, "items", "add", "Write the notes", "--parent", "fix-1")["item"]
    assert notes["id"].startswith("it-") and notes["parent"] == "fix-1"
    assert (notes["status"], notes["priority"], notes["labels"]) == ("open", 2, [])

    table = ok(jo, "items", "ls")
    assert "ID" in table and "TITLE" in table and "ci, flaky" in table
    assert "Fix the [flaky] test" in table and notes["id"] in table
    assert [x["id"] for x in doc(jo, "items", "ls", "--label", "ci")["items"]] == ["fix-1"]
    assert doc(jo, "items", "ls", "--status", "done")["items"] == []
    assert ok(jo, "items", "ls", "--assignee", "nobody").strip() == "no items"
    assert [x["id"] for x in doc(jo, "ready", "--limit", "1")["items"]] == ["fix-1"]
    ready = ok(jo, "ready")
    assert ready.index("fix-1") < ready.index(notes["id"])  # priority 1 before 2

    shown = ok(jo, "items", "show", "fix-1")
    for word in ("Fix the [flaky] test", "open", "ci, flaky", "it fails on tuesdays", "by jo"):
        assert word in shown
    view = doc(jo, "items", "show", "fix-1")
    assert view["item"]["labels"] == ["ci", "flaky"] and view["item"]["body"]
    assert (view["lease"], view["lease_state"], view["transfers"]) == (None, "none", [])

    # Bad input: exit 2 (or 3, 5 for what exists or does not), and nothing is added.
    before = len(jos.items.list())
    assert "title" in fails(jo, 2, "items", "add", "")
    assert "--priority" in fails(jo, 2, "items", "add", "x", "--priority", "1001")
    assert "id" in fails(jo, 2, "items", "add", "x", "--id", "bad id!")
    assert "exists already" in fails(jo, 3, "items", "add", "x", "--id", "fix-1")
    assert "not found" in fails(jo, 5, "items", "add", "x", "--parent", "nope")
    assert "--status" in fails(jo, 2, "items", "ls", "--status", "sleeping")
    assert "not found: no item 'nope'" in fails(jo, 5, "items", "show", "nope")
    assert len(jos.items.list()) == before


# claim, renew, extend, progress, complete ---------------------------------------------------
def test_claim_progress_complete_with_the_remembered_epoch(jo: Shell, jos: tenure.Client) -> None:
    jos.items.create("Ship it", id="42")
    shown = ok(jo, "claim", "42", "--ttl", "5m", "--task", "pr-1")
    assert "in_progress" in shown and "pr-1" in shown
    session = doc(jo, "whoami")["session"]  # the CLI's own, saved in the config directory
    assert re.fullmatch(SESSION, session)
    assert (jo.home / "config" / "session").read_text().strip() == session
    held = rf"live, held by jo \(session {session}\), expires {CLOCK}, in (5m|4m5\ds)"
    assert re.search(held, shown), shown
    epoch = remembered(jo)["items/42"]
    assert epoch >= 1

    again = doc(jo, "claim", "42")  # re-claiming your own live claim renews it: same session
    assert again["lease"]["token"] == again["item"]["epoch"] == epoch
    assert again["item"]["assignee"] == "jo" and again["lease"]["renewals"] == 1
    assert again["lease"]["session"] == session
    # another session of jo (a script, an agent) is refused like anyone else
    script = jo("claim", "42", "--json", TENURE_SESSION="script-1")
    assert (script.returncode, script.stdout) == (3, "")
    problem = json.loads(script.stderr)
    assert (problem["code"], problem["holder"], problem["session"]) == ("lease_held", "jo", session)
    assert f"held by jo (session {session}, task pr-1)" in fails(
        jo, 3, "--session", "script-1", "claim", "42"
    )
    renewed = doc(jo, "renew", "42", "--ttl", "10m")["lease"]
    assert (renewed["token"], renewed["ttl_ms"]) == (epoch, 600_000)
    line = ok(jo, "renew", "42")
    assert re.fullmatch(
        rf"42: epoch {epoch}, held by jo \(session {session}, task pr-1\) until {CLOCK}, in .+\n",
        line,
    )

    extended = doc(jo, "extend", "42", "2h")
    assert not extended["capped"] and extended["lease"]["token"] == epoch
    assert abs(extended["granted_until"] - (time.time() * 1000 + 7_200_000)) < 60_000
    capped = ok(jo, "extend", "42", "3d")  # past max_lease (24 h): capped, and says so
    assert capped.startswith("42 now expires at ") and "(capped: asked " in capped

    said = ok(jo, "progress", "42", "tests pass", "--percent", "60", "--data", '{"rows": 3}')
    assert said.startswith("42: 60% tests pass (jo")
    item = doc(jo, "progress", "42", "half way")["item"]
    assert item["progress"]["message"] == "half way" and item["epoch"] == epoch
    assert jos.items.get("42").item.progress == item["progress"]

    mine = doc(jo, "queue")["items"]
    assert [(v["item"]["id"], v["lease_state"]) for v in mine] == [("42", "live")]
    assert doc(jo, "queue", "jo")["items"] == mine
    table = ok(jo, "queue")
    assert "LEASE" in table and "live" in table and "half way" in table

    done = doc(jo, "complete", "42", "--result", '{"pr": 1234}', "--op-id", "done-42")
    assert done["item"]["status"] == "done" and done["item"]["result"] == {"pr": 1234}
    assert done["duplicate"] is False
    assert "items/42" not in remembered(jo)  # forgotten once complete
    repeat = ok(jo, "complete", "42", "--op-id", "done-42", "--epoch", str(epoch))
    assert repeat.strip() == "42: done (already, with this --op-id)"
    assert ok(jo, "queue").strip() == "nothing assigned"

    history = ok(jo, "items", "show", "42")
    assert "transfers" in history and "claimed" in history and "completed" in history
    view = doc(jo, "items", "show", "42")
    assert [t["reason"] for t in view["transfers"]] == ["claimed", "completed"]
    assert view["transfers"][0]["to"] == "jo" and view["transfers"][0]["epoch"] == epoch


def test_takeover_stale_epochs_and_the_epoch_override(
    jo: Shell, bob: Shell, jos: tenure.Client
) -> None:
    jos.items.create("Migrate the billing DB", id="7")
    first = doc(jo, "claim", "7", "--ttl", "1s", "--task", "t1")["lease"]["token"]
    wait_for(lambda: jos.items.get("7").lease_state == "lapsed", what="the claim to lapse")
    assert "lapsed" in ok(jo, "queue")

    said = fails(bob, 3, "claim", "7")
    assert "7 assigned to jo (lease expired)" in said and "--takeover --reason" in said
    assert "--reason" in fails(bob, 2, "claim", "7", "--takeover")
    # (held 10m: the twenty CLI calls below must meet it live however slow the machine is)
    took = doc(bob, "claim", "7", "--takeover", "--reason", "jo stopped answering", "--ttl", "10m")
    second = took["lease"]["token"]
    assert second > first and took["item"]["assignee"] == "bob"
    assert remembered(bob)["items/7"] == second

    # jo's remembered epoch is stale now: fenced writes are refused with exit 4, naming bob.
    assert remembered(jo)["items/7"] == first
    said = fails(jo, 4, "progress", "7", "still here")
    assert f"token {first} is stale: the current token is {second}, held by bob" in said
    assert "is stale" in fails(jo, 4, "complete", "7")
    fails(jo, 4, "renew", "7")
    fails(jo, 4, "extend", "7", "1h")
    said = ok(jo, "release", "7")  # with jo's stale epoch: nothing changes, and it says so
    assert said == (
        f"7: epoch {first} is not the item's (it is {second}): nothing released; "
        "it is in_progress\n"
    )
    view = jos.items.get("7")
    assert (view.item.status, view.item.assignee, view.item.progress) == (
        "in_progress",
        "bob",
        None,
    )

    # --epoch overrides the remembered epoch; without either, a usage error.
    assert ok(bob, "progress", "7", "copying", "--percent", "10").startswith("7: 10% copying")
    assert "is stale" in fails(bob, 4, "progress", "7", "x", "--epoch", str(first))
    laptop = Shell(bob.url, bob.token, bob.home.parent / "bob-laptop")  # remembers nothing
    assert "no token remembered for 'items/7'" in fails(laptop, 2, "progress", "7", "x")
    assert "--epoch" in fails(laptop, 2, "complete", "7")
    moved = doc(laptop, "progress", "7", "half", "--percent", "50", "--epoch", str(second))
    assert moved["item"]["progress"]["percent"] == 50

    # jo's briefing tells the story once; the cursor moves.
    brief = ok(jo, "brief")
    assert "since your last briefing:" in brief
    assert re.search(r"claimed items/7 holder=bob .*reason=jo stopped answering", brief), brief
    assert doc(jo, "brief")["happened"] == []
    assert doc(bob, "brief")["carrying"][0]["item"]["id"] == "7"

    assert ok(bob, "release", "7").strip() == "7: released; it is open"
    again = doc(bob, "release", "7")  # idempotent
    assert again["released"] is False and again["item"]["status"] == "open"
    assert "items/7" not in remembered(bob)
    history = [t["reason"] for t in doc(bob, "items", "show", "7")["transfers"]]
    assert history == ["claimed", "taken_over", "released"]


def test_held_items_name_holder_task_and_expiry(
    shell: Callable[..., Shell], jo: Shell, bob: Shell, jos: tenure.Client
) -> None:
    jos.items.create("Deploy", id="9")
    jos.items.create("Spare", id="10")
    epoch = doc(jo, "claim", "9", "--ttl", "5m", "--task", "deploy-42")["item"]["epoch"]

    said = fails(bob, 3, "claim", "9")
    pattern = (
        rf"tenure: items/9 held by jo \(session {SESSION}, task deploy-42\) until {CLOCK}, "
        rf"in (5m|4m[0-5]?\ds)"  # (seconds after the claim, however slow the machine)
    )
    assert re.fullmatch(pattern + "\n", said), said
    done = bob("claim", "9", "--json")  # --json: the problem on stderr, nothing on stdout
    assert (done.returncode, done.stdout) == (3, "")
    problem = json.loads(done.stderr)
    assert (problem["code"], problem["holder"], problem["task"]) == (
        "lease_held",
        "jo",
        "deploy-42",
    )
    assert "held by jo" in fails(bob, 3, "renew", "9", "--epoch", str(epoch))
    assert "held by jo" in fails(bob, 3, "extend", "9", "1h", "--epoch", str(epoch))
    assert "may not cancel" in fails(bob, 1, "cancel", "9", "--reason", "mine now")

    root = shell("root2", roles=("admin",))
    assert ok(root, "cancel", "9", "--reason", "duplicate of 8").strip() == (
        "9: cancelled (duplicate of 8)"
    )
    assert f"token {epoch} was revoked" in fails(jo, 4, "complete", "9")  # by the cancel
    assert "is cancelled" in fails(jo, 3, "claim", "9")  # conflict with its state
    ok(jo, "claim", "10")
    cancelled = doc(jo, "cancel", "10", "--reason", "not needed")["item"]
    assert (cancelled["status"], cancelled["assignee"]) == ("cancelled", None)
    assert "items/10" not in remembered(jo)
    assert "--reason" in fails(jo, 2, "cancel", "10")


def test_bad_input_exits_2_and_changes_nothing(jo: Shell, jos: tenure.Client) -> None:
    jos.items.create("Steady", id="5")
    epoch = doc(jo, "claim", "5", "--ttl", "5m")["item"]["epoch"]
    before = state_of(jos, "5")

    assert "not a duration: '5x'" in fails(jo.process(), 2, "claim", "5", "--ttl", "5x")
    assert "not a positive duration" in fails(jo.process(), 2, "renew", "5", "--ttl", "0s")
    assert "not a duration" in fails(jo, 2, "extend", "5", "soon")
    assert "not JSON" in fails(jo, 2, "progress", "5", "x", "--data", "{bad")
    assert "JSON object" in fails(jo, 2, "progress", "5", "x", "--data", "[1]")
    assert "--percent" in fails(jo, 2, "progress", "5", "x", "--percent", "101")
    assert "not JSON" in fails(jo, 2, "complete", "5", "--result", "{bad")
    assert "--epoch" in fails(jo, 2, "complete", "5", "--epoch", "seven")
    said = fails(jo, 2, "renew", "5", "--ttl", "11m")  # over the policy's max_ttl
    assert "--ttl 11m is too long: at most 10m (policy max_ttl)" in said
    assert "(field id)" in fails(jo, 2, "claim", "bad id!")
    assert "not found: no item 'nope'" in fails(jo.process(), 5, "claim", "nope")
    fails(jo, 5, "progress", "nope", "x", "--epoch", str(epoch))

    assert state_of(jos, "5") == before
    assert remembered(jo)["items/5"] == epoch


# events and heartbeat -----------------------------------------------------------------------
def test_heartbeat_renews_everything_and_exits_4_for_a_loss(
    shell: Callable[..., Shell], jo: Shell, jos: tenure.Client
) -> None:
    session = doc(jo, "whoami")["session"]
    with tenure.Client(jo.url, token=jo.token, session=session) as cli_session:
        cli_session.items.create("Long job", id="long")
        cli_session.items.claim("long", ttl_ms=60_000)
        cli_session.acquire("jobs/nightly", ttl_ms=30_000)
        cli_session.acquire("jobs/hourly", ttl_ms=30_000)
    jos.acquire("jobs/elsewhere", ttl_ms=30_000)  # another session of jo's: not the CLI's

    said = ok(jo, "heartbeat")
    for key in ("items/long", "jobs/nightly", "jobs/hourly"):
        assert re.search(rf"renewed {key} \(token \d+\) until {CLOCK}", said), said
    assert "jobs/elsewhere" not in said and jos.get_lease("jobs/elsewhere").renewals == 0
    inside = jo("heartbeat", TENURE_SESSION=jos.session)  # as in a command of `tenure run`
    assert inside.returncode == 0, inside.stderr
    assert "renewed jobs/elsewhere" in inside.stdout and "jobs/nightly" not in inside.stdout
    beat = doc(jo, "heartbeat", "jobs/nightly")
    assert [x["key"] for x in beat["renewed"]] == ["jobs/nightly"] and beat["lost"] == []
    assert jos.get_lease("jobs/nightly").renewals == 2

    with client_of(shell("root2", roles=("admin",))) as root:
        root.force_release("jobs/hourly", "wedged")
    # Without KEYs the session's lapsed leases show as lost too; and for the keys named.
    said = fails_with_output(jo, 4, "heartbeat")
    assert "lost jobs/hourly (token " in said and "force_released" in said
    assert "renewed jobs/nightly" in said
    said = fails_with_output(jo, 4, "heartbeat", "jobs/hourly", "items/long")
    assert "lost jobs/hourly (token " in said and "force_released" in said
    assert "renewed items/long" in said
    beat = json.loads(
        fails_with_output(jo, 4, "heartbeat", "jobs/hourly", "jobs/nightly", "--json")
    )
    assert [(x["key"], x["reason"]) for x in beat["lost"]] == [("jobs/hourly", "force_released")]
    assert [x["key"] for x in beat["renewed"]] == ["jobs/nightly"]
    assert ok(shell("bob"), "heartbeat").strip() == "no live leases to renew"


def fails_with_output(user: Shell, code: int, *args: str) -> str:
    """``tenure ARGS…`` exits ``code`` but still reports on stdout (``heartbeat``)."""
    done = user(*args)
    assert done.returncode == code, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout


def test_events_list_and_follow(jo: Shell, jos: tenure.Client) -> None:
    jos.items.create("Watched", id="w")
    jos.items.claim("w", ttl_ms=60_000, task="watch")
    table = ok(jo, "events", "--key", "items/w")
    assert "TYPE" in table and "acquired" in table and "claimed" in table
    listed = doc(jo, "events", "--key", "items/w", "--type", "claimed")
    assert [e["type"] for e in listed["events"]] == ["claimed"]
    cursor = doc(jo, "events")["next"]
    assert doc(jo, "events", "--after", str(cursor)) == {"events": [], "next": cursor}
    assert "--limit" in fails(jo, 2, "events", "--limit", "0")

    # --follow: one JSON line per event as it happens; SIGTERM ends it cleanly (exit 0).
    follow = jo.popen("events", "--follow", "--json", "--after", str(cursor))
    human = jo.popen("events", "-f", "--key", "jobs/a", "--after", str(cursor))
    try:
        lines, shown = reader(follow), reader(human)
        jos.acquire("jobs/a", ttl_ms=30_000, task="cron")
        first = json.loads(lines.get(timeout=15))
        assert (first["type"], first["key"], first["holder"]) == ("acquired", "jobs/a", "jo")
        jos.release("jobs/a")
        second = json.loads(lines.get(timeout=15))
        assert second["type"] == "released" and second["id"] > first["id"]
        assert re.fullmatch(
            rf"{CLOCK} #\d+ acquired jobs/a holder=jo task=cron token=\d+\n",
            shown.get(timeout=15),
        )
        assert "released jobs/a" in shown.get(timeout=15)
    finally:
        follow.send_signal(signal.SIGTERM)
        human.send_signal(signal.SIGINT)
        assert follow.wait(timeout=15) == 0 and human.wait(timeout=15) == 0
    assert follow.stderr is not None and follow.stderr.read() == ""
    assert human.stderr is not None and human.stderr.read() == ""


def reader(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The lines ``proc`` prints, as they come."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines
