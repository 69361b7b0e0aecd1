"""``tenure run KEY -- CMD``: a lease-guarded command, run as a real process against a real server.

CMD is a small ``sh`` script that records what it sees in files under the test's directory and,
where a test needs it to keep running, waits for a ``go`` file (at most 20 s). Every wait of the
test itself is bounded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from procs import Shell, alive, read_int, wait_for

if TYPE_CHECKING:
    from conftest import LiveServer

KEY = "jobs/nightly"


def gate(go: Path) -> str:
    """Shell: wait until ``go`` exists (20 s at most)."""
    return f'i=0; while [ ! -e "{go}" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done'


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo")


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.admin_token) as client:
        yield client


@pytest.fixture
def background() -> Iterator[Callable[[subprocess.Popen[str]], subprocess.Popen[str]]]:
    """Register a background ``tenure run``: killed at teardown if still running (its CMD
    dies with it)."""
    started: list[subprocess.Popen[str]] = []

    def register(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
        started.append(proc)
        return proc

    yield register
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def lease_of(admin: httpx.Client, key: str = KEY) -> dict[str, Any]:
    reply = admin.get(f"/v1/leases/{key}")
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["lease"])


def said(stderr: str) -> list[str]:
    """run's own lines on stderr (CMD's shell may report its children killed there too)."""
    return [line for line in stderr.splitlines() if line.startswith("tenure:")]


def finish(proc: subprocess.Popen[str], timeout: float = 20) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


# holding, environment, exit status ---------------------------------------------------------------
def test_cmd_runs_under_a_live_heartbeated_lease_that_is_released_after(
    jo: Shell, admin: httpx.Client, live_server: LiveServer, tmp_path: Path, background: Any
) -> None:
    env, go = tmp_path / "env.json", tmp_path / "go"
    names = ("LEASE_KEY", "LEASE_TOKEN", "TOKEN", "URL", "SESSION", "KEY")
    script = (
        "printf '{"
        + ", ".join(f'"{n}": "%s"' for n in names)
        + "}' "
        + " ".join(f'"${{TENURE_{n}-unset}}"' for n in names)
        + f' > "{env}.tmp"; mv "{env}.tmp" "{env}"; echo "hello from cmd"; {gate(go)}; exit 7'
    )
    run = background(
        jo.popen("run", KEY, "--ttl", "2s", "--task", "nightly", "--", "sh", "-c", script)
    )
    seen = json.loads(wait_for(lambda: env.exists() and env.read_text(), what="CMD's env"))
    held = lease_of(admin)
    assert (held["state"], held["holder"], held["task"]) == ("live", "jo", "nightly")
    assert held["session"].startswith("run:")  # a session of the run's own
    assert seen == {
        "LEASE_KEY": KEY,
        "LEASE_TOKEN": str(held["token"]),  # the fencing token
        "TOKEN": jo.token,  # the bearer token, so that CMD acts as the holder
        "URL": live_server.url,
        "SESSION": held["session"],
        "KEY": "unset",
    }
    time.sleep(2.5)  # longer than the ttl: only the heartbeat keeps the lease
    renewed = lease_of(admin)
    assert renewed["state"] == "live" and renewed["token"] == held["token"]
    assert renewed["renewals"] >= 2, renewed
    go.touch()
    code, out, err = finish(run)
    assert (code, out, err) == (7, "hello from cmd\n", "")  # CMD's status and output, nothing else
    assert lease_of(admin)["state"] == "released"


# CMD as the holder: the client reads TENURE_URL, TENURE_TOKEN and TENURE_SESSION
HOLDER = """
import os, sys
import tenure
key, token = os.environ["TENURE_LEASE_KEY"], int(os.environ["TENURE_LEASE_TOKEN"])
with tenure.Client() as client:
    assert client.session == os.environ["TENURE_SESSION"]
    write = client.fenced_write(key, token, {"by": "cmd"}, op_id="cmd-1")
    again = client.acquire(key, ttl_ms=2000)  # the run's own session: renews, same token
    print(client.me().name, write.version, again.token == token, again.renewals > 0)
"""


def test_cmd_acts_as_the_holder_with_the_bearer_token_and_the_runs_session(
    jo: Shell, admin: httpx.Client
) -> None:
    script = (
        f'{sys.executable} -c "$HOLDER" && tenure_cli lock renew "$TENURE_LEASE_KEY" --json '
        '&& tenure_cli lock acquire "$TENURE_LEASE_KEY" --json'
    )
    shim = f'tenure_cli() {{ {sys.executable} -m tenure.cli "$@"; }}; '
    done = jo("run", KEY, "--ttl", "2s", "--", "sh", "-c", shim + script, HOLDER=HOLDER)
    assert done.returncode == 0, done.stderr
    first, renewed, acquired = done.stdout.splitlines()
    assert first == "jo 1 True True"
    held = lease_of(admin)
    for line in (renewed, acquired):  # the CLI inside CMD acts in the run's session too
        lease = json.loads(line)["lease"]
        assert (lease["token"], lease["session"]) == (held["token"], held["session"])
    assert held["state"] == "released" and held["renewals"] >= 3
    written = admin.get(f"/v1/fenced/{KEY}").json()
    assert (written["value"], written["token"]) == ({"by": "cmd"}, held["token"])


def test_exit_status_of_a_signal_and_of_a_missing_command(jo: Shell, admin: httpx.Client) -> None:
    killed = jo("run", KEY, "--ttl", "2s", "--", "sh", "-c", "kill -TERM $$")
    assert (killed.returncode, killed.stdout, killed.stderr) == (128 + signal.SIGTERM, "", "")
    missing = jo("run", KEY, "--ttl", "2s", "--", "/no/such/command", "x")
    assert missing.returncode == 127 and missing.stdout == ""
    assert missing.stderr.startswith("tenure: cannot run /no/such/command:"), missing.stderr
    assert lease_of(admin)["state"] == "released"
    assert lease_of(admin)["token"] == 2


def test_json_is_the_only_thing_on_stdout_and_cmd_output_goes_to_stderr(
    jo: Shell, admin: httpx.Client
) -> None:
    script = "echo out; echo err >&2; exit 9"
    done = jo("run", KEY, "--ttl", "2s", "--json", "--", "sh", "-c", script)
    assert done.returncode == 9
    doc = json.loads(done.stdout)  # the whole of stdout is one JSON document
    assert doc["key"] == KEY and doc["token"] == lease_of(admin)["token"]
    assert (doc["exit_code"], doc["status"], doc["lost"], doc["signal"]) == (9, 9, False, None)
    assert doc["command"] == ["sh", "-c", script]
    assert done.stderr.splitlines() == ["out", "err"]


def test_usage_errors(jo: Shell) -> None:
    both = jo("run", KEY, "--wait", "1s", "--no-wait", "--", "true")
    assert both.returncode == 2 and "exclude each other" in both.stderr
    assert jo("run", KEY).returncode == 2  # no CMD


# a held key ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("second", ["al", "jo"], ids=["other-principal", "same-principal"])
def test_a_held_key_refuses_at_once_naming_the_holder(
    second: str,
    jo: Shell,
    shell: Callable[..., Shell],
    admin: httpx.Client,
    tmp_path: Path,
    background: Any,
) -> None:
    """Also a second run of the same principal (a cron job overlapping its last run): each run
    is a session of its own, so the server refuses it like anyone's, naming the session."""
    started, go, ran = tmp_path / "started", tmp_path / "go", tmp_path / "ran"
    first = background(
        jo.popen(
            "run", KEY, "--ttl", "2s", "--task", "deploy-42", "--",
            "sh", "-c", f'touch "{started}"; {gate(go)}',
        )
    )  # fmt: skip
    wait_for(started.exists, what="the first CMD")
    before = lease_of(admin)
    other = jo if second == "jo" else shell(second)
    for flags in (["--no-wait"], []):  # refusing at once is the default
        refused = other("run", KEY, *flags, "--", "touch", str(ran))
        assert refused.returncode == 3, refused.stderr
        assert refused.stdout == ""
        assert refused.stderr.startswith(
            f"tenure: {KEY} held by jo (session {before['session']}, task deploy-42) until "
        ), refused.stderr
    assert not ran.exists()
    after = lease_of(admin)
    assert (after["token"], after["task"], after["ttl_ms"]) == (before["token"], "deploy-42", 2000)
    go.touch()
    assert finish(first)[0] == 0


@pytest.mark.parametrize("second", ["al", "jo"], ids=["other-principal", "same-principal"])
def test_with_wait_it_runs_right_after_the_first_ends(
    second: str,
    jo: Shell,
    shell: Callable[..., Shell],
    admin: httpx.Client,
    tmp_path: Path,
    background: Any,
) -> None:
    started, go, ended, ran = (tmp_path / n for n in ("started", "go", "ended", "ran"))
    first = background(
        jo.popen(
            "run", KEY, "--ttl", "5s", "--", "sh", "-c",
            f'touch "{started}"; {gate(go)}; touch "{ended}"',
        )
    )  # fmt: skip
    wait_for(started.exists, what="the first CMD")
    other = jo if second == "jo" else shell(second)
    waiter = background(
        other.popen(
            "run", KEY, "--ttl", "2s", "--wait", "20s", "--",
            "sh", "-c", f'echo "$TENURE_LEASE_TOKEN" > "{ran}"',
        )
    )  # fmt: skip
    time.sleep(1.0)
    assert waiter.poll() is None and not ran.exists()  # it waits
    go.touch()
    assert finish(first)[0] == 0
    first_ended = ended.stat().st_mtime
    assert finish(waiter)[0] == 0
    assert ran.read_text().strip() == "2"  # a new lease, after the first one's
    assert ran.stat().st_mtime - first_ended < 2.0  # right after, not at the first's deadline
    assert lease_of(admin)["state"] == "released"


# a lost lease -------------------------------------------------------------------------------------
@pytest.mark.parametrize("traps_term", [False, True], ids=["exits-on-term", "traps-term"])
def test_a_lost_lease_stops_cmd_and_run_exits_4(
    traps_term: bool,
    jo: Shell,
    shell: Callable[..., Shell],
    admin: httpx.Client,
    tmp_path: Path,
    background: Any,
) -> None:
    pid, term = tmp_path / "pid", tmp_path / "term"
    trap = f"trap 'echo TERM > \"{term}\"' TERM; " if traps_term else ""
    script = f'{trap}echo $$ > "{pid}"; {gate(tmp_path / "never")}'
    run = background(jo.popen("run", KEY, "--ttl", "2s", "--grace", "1s", "--", "sh", "-c", script))
    cmd = read_int(pid)
    since = time.monotonic()  # before the force-release: the loss may be seen before it returns
    if traps_term:  # by an admin with the CLI
        root = shell("root", roles=("admin",))
        forced = root("lock", "force-release", KEY, "--reason", "wedged")
        assert forced.returncode == 0, forced.stderr
    else:  # by an admin over HTTP
        forced_http = admin.post("/v1/leases/force-release", json={"key": KEY, "reason": "wedged"})
        assert forced_http.status_code == 200, forced_http.text
    code, out, err = finish(run)
    took = time.monotonic() - since
    assert (code, out) == (4, "")
    assert not alive(cmd)
    lost = f"tenure: {KEY}: the lease was lost (force_released); stopped sh (pid {cmd})"
    if traps_term:
        assert term.read_text().strip() == "TERM"  # SIGTERM first, SIGKILL after the grace
        assert said(err) == [f"{lost}: SIGTERM, then SIGKILL after the grace period"], err
        assert 1.0 <= took < 5, took
    else:
        assert said(err) == [f"{lost} with SIGTERM"], err
        assert took < 3, took
    assert lease_of(admin)["state"] == "force_released"


# signals sent to run ------------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_signals_to_run_are_forwarded_to_cmd(
    sig: signal.Signals, jo: Shell, admin: httpx.Client, tmp_path: Path, background: Any
) -> None:
    pid, got = tmp_path / "pid", tmp_path / "got"
    script = (
        f"trap 'echo {sig.name} > \"{got}\"; exit 42' {sig.name[3:]}; "
        f'echo $$ > "{pid}"; {gate(tmp_path / "never")}'
    )
    run = background(jo.popen("run", KEY, "--ttl", "2s", "--", "sh", "-c", script))
    cmd = read_int(pid)
    run.send_signal(sig)
    code, out, err = finish(run)
    assert (code, out, said(err)) == (42, "", [])  # CMD's own status: it handled the signal
    assert got.read_text().strip() == sig.name
    assert not alive(cmd)
    assert lease_of(admin)["state"] == "released"


def test_a_cmd_that_ignores_a_forwarded_signal_is_killed_after_the_grace(
    jo: Shell, admin: httpx.Client, tmp_path: Path, background: Any
) -> None:
    pid = tmp_path / "pid"
    script = f'trap "" TERM; echo $$ > "{pid}"; {gate(tmp_path / "never")}'
    run = background(
        jo.popen("run", KEY, "--ttl", "2s", "--grace", "1s", "--json", "--", "sh", "-c", script)
    )
    cmd = read_int(pid)
    since = time.monotonic()
    run.send_signal(signal.SIGTERM)
    code, out, _ = finish(run)
    assert code == 128 + signal.SIGKILL and 1.0 <= time.monotonic() - since < 5
    doc = json.loads(out)
    assert (doc["forwarded"], doc["signal"], doc["killed"], doc["lost"]) == (
        "SIGTERM",
        "SIGKILL",
        True,
        False,
    )
    assert not alive(cmd)
    assert lease_of(admin)["state"] == "released"
