"""``tenure.supervise`` used from Python against a real server: a command guarded by a lease
(``run``), an item dispatched to a new agent (``dispatch``), and the fact the dispatched
item's supervisor leaves when its command exits without completing the item (a release with
reason ``command_exited`` and the exit status, kept by the server), as the API, ``tenure
items show`` and ``tenure queue`` show it.

The supervisor does not depend on the backend: these run on SQLite only.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import tenure
from procs import Shell, alive, wait_for
from tenure.errors import DispatchFailed, LeaseHeld
from tenure.supervise import DispatchOptions, RunOptions, dispatch, run

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo")


@pytest.fixture
def jos(jo: Shell) -> Iterator[tenure.Client]:
    with tenure.Client(jo.url, token=jo.token, session="run:test") as client:
        yield client


def test_run_holds_the_lease_while_the_command_runs(jos: tenure.Client, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    script = f'echo "$TENURE_LEASE_KEY $TENURE_LEASE_TOKEN $TENURE_SESSION" > "{seen}"; exit 3'
    ending = run(jos, RunOptions("jobs/nightly", ["sh", "-c", script], ttl_ms=5_000))
    assert (ending.key, ending.status, ending.lost, ending.error) == ("jobs/nightly", 3, None, None)
    assert seen.read_text().split() == ["jobs/nightly", str(ending.token), "run:test"]
    assert jos.get_lease("jobs/nightly").state == "released"  # released when the command ended


def test_run_refuses_a_held_key_without_running_the_command(
    jos: tenure.Client, shell: Callable[..., Shell], tmp_path: Path
) -> None:
    al = shell("al")
    with tenure.Client(al.url, token=al.token) as other:
        other.acquire("jobs/nightly", 60_000)
        ran = tmp_path / "ran"
        with pytest.raises(LeaseHeld) as held:
            run(jos, RunOptions("jobs/nightly", ["touch", str(ran)]))
    assert held.value.holder == "al" and not ran.exists()


def test_a_command_that_cannot_start_ends_127(jos: tenure.Client) -> None:
    ending = run(jos, RunOptions("jobs/x", ["/nonexistent/command"]))
    assert ending.status == 127 and ending.pid is None
    assert ending.error is not None and "cannot run /nonexistent/command" in ending.error


def dispatched(jos: tenure.Client, tmp_path: Path, item: str, *cmd: str) -> int:
    """Dispatch ``item`` to a new agent running ``cmd``; its supervisor's pid, once it ended."""
    options = DispatchOptions(item, cmd, agent="bot", ttl_ms=5_000, log=tmp_path / f"{item}.log")
    done = dispatch(jos, options)
    assert done.granted.agent.name == "jo/bot" and done.log == tmp_path / f"{item}.log"
    wait_for(lambda: not alive(done.supervisor_pid), timeout=30, what="the supervisor's end")
    os.waitpid(done.supervisor_pid, 0)  # ours to reap: it was started by this process
    return done.supervisor_pid


def test_a_command_that_exits_without_completing_leaves_the_fact_on_the_release(
    jo: Shell, jos: tenure.Client, tmp_path: Path
) -> None:
    jos.items.create("Review", id="review")
    dispatched(jos, tmp_path, "review", "sh", "-c", "exit 3")
    view = jos.items.get("review")
    assert (view.item.status, view.item.assignee) == ("open", None)
    last = view.transfers[-1]
    assert (last.reason, last.from_, last.note, last.exit_status) == (
        "released", "jo/bot", "command_exited", 3,
    )  # fmt: skip
    released = jos.events(item="review", type="released_item")[-1]
    assert (released.reason, released.data["exit_status"]) == ("command_exited", 3)
    assert not [e for e in jos.events(item="review") if e.type == "progress"]  # no text left
    shown = jo("items", "show", "review")
    assert "command_exited: the command ended with status 3" in shown.stdout, shown.stdout
    queue = jo.json("queue")["left_open"]
    assert [(x["item"], x["agent"], x["exit_status"]) for x in queue] == [("review", "jo/bot", 3)]


def test_a_killed_command_is_recorded_with_a_shells_status(
    jos: tenure.Client, tmp_path: Path
) -> None:
    jos.items.create("Crash", id="crash")
    dispatched(jos, tmp_path, "crash", "sh", "-c", "kill -TERM $$")
    last = jos.items.get("crash").transfers[-1]
    assert (last.note, last.exit_status) == ("command_exited", 128 + signal.SIGTERM)


def test_a_command_that_completes_its_item_leaves_no_release(
    jos: tenure.Client, tmp_path: Path
) -> None:
    jos.items.create("Docs", id="docs")
    script = 'tenure complete "$TENURE_ITEM"'
    dispatched(jos, tmp_path, "docs", "sh", "-c", script)
    view = jos.items.get("docs")
    assert view.item.status == "done"
    assert [t.reason for t in view.transfers] == ["claimed", "completed"]


def test_a_dispatch_whose_command_cannot_start_fails_and_releases(
    jos: tenure.Client, tmp_path: Path
) -> None:
    jos.items.create("Broken", id="broken")
    options = DispatchOptions("broken", ["/nonexistent/command"], log=tmp_path / "b.log")
    with pytest.raises(DispatchFailed) as failed:
        dispatch(jos, options)
    err = failed.value
    assert err.item == "broken" and err.log == str(tmp_path / "b.log")
    assert err.reason is not None and "could not be started" in err.reason
    view = jos.items.get("broken")
    assert (view.item.status, view.item.assignee) == ("open", None)


def test_the_api_refuses_a_cause_it_does_not_know(
    jo: Shell, jos: tenure.Client, live_server: LiveServer
) -> None:
    jos.items.create("Plain", id="plain")
    epoch = jos.items.claim("plain").lease.token
    with live_server.http(jo.token) as http:
        for body, field in (
            ({"reason": "command_exited", "exit_status": 256}, "exit_status"),
            ({"reason": "bored", "exit_status": 1}, "reason"),
            ({"reason": "command_exited"}, "exit_status"),
        ):
            refused = http.post("/v1/items/plain/release", json={"epoch": epoch, **body})
            assert refused.status_code == 422, refused.text
            assert refused.json()["code"] == "invalid_request"
            assert field in refused.text, refused.text
    view = jos.items.get("plain")
    assert view.item.assignee == "jo" and [t.reason for t in view.transfers] == ["claimed"]
