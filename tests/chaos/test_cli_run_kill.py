"""``kill -9`` of ``tenure run``: its command dies with it, and the lease lapses on its own.

A real ``tenure serve`` and real ``tenure run`` processes. The first test kills ``run`` while its
CMD (a shell) and the shell's own child run: both die at once (the shell by the parent-death
signal, its child by the watchdog that kills CMD's process group), nobody releases the lease,
and a second ``run`` of the same principal gets the key only after the first lease's deadline.
The second test kills the watchdog first, then ``run``: the parent-death signal alone still
kills CMD (Linux).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import tenure
from procs import Serve, Shell, alive, read_int, wait_for
from tenure.service.principals import Principals

KEY = "jobs/guarded"


def token_for(db: str, name: str, roles: tuple[str, ...] = ()) -> str:
    store = tenure.open_store(db)
    try:
        return Principals(store).bootstrap(name, "human", roles).token
    finally:
        store.close()


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(x) for x in (task / "children").read_text().split()]
    return found


@pytest.fixture
def served(store_url: str, tmp_path: Path) -> Iterator[tuple[Serve, Shell, httpx.Client]]:
    """The server, ``jo``'s shell, and an admin's HTTP client."""
    root, jo = token_for(store_url, "root", ("admin",)), token_for(store_url, "jo")
    server = Serve(store_url)
    try:
        with server.http(root) as admin:
            yield server, Shell(server.url, jo, tmp_path / "jo"), admin
    finally:
        server.kill()


@pytest.fixture
def cleanup() -> Iterator[list[int]]:
    """Pids to SIGKILL at teardown if a failed test left them running."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def kill_9(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    assert proc.wait(10) == -signal.SIGKILL  # (not communicate(): CMD may hold its pipes)


def test_kill_9_of_run_kills_cmd_and_its_child_and_the_lease_lapses_on_its_own(
    served: tuple[Serve, Shell, httpx.Client], tmp_path: Path, cleanup: list[int]
) -> None:
    _, jo, admin = served
    shell_pid, child_pid = tmp_path / "shell.pid", tmp_path / "child.pid"
    script = f'echo $$ > "{shell_pid}"; sleep 60 & echo $! > "{child_pid}"; wait'
    # ttl 10 s: the refusal below must reach the server before the lease lapses, after a kill and
    # a CLI start on a loaded box
    run = jo.popen("run", KEY, "--ttl", "10s", "--", "sh", "-c", script)
    cmd, child = read_int(shell_pid), read_int(child_pid)
    cleanup += [run.pid, cmd, child]
    kill_9(run)
    wait_for(lambda: not alive(cmd) and not alive(child), timeout=5, what="CMD to die")

    lease = admin.get(f"/v1/leases/{KEY}").json()["lease"]
    assert (lease["state"], lease["holder"], lease["token"]) == ("live", "jo", 1)  # not released
    refused = jo("run", KEY, "--no-wait", "--", "true")
    assert refused.returncode == 3, refused.stderr  # its own principal's lease still counts
    assert refused.stderr.startswith(f"tenure: {KEY} held by jo (session {lease['session']}, ")

    second = jo(
        "run", KEY, "--wait", "20s", "--", "sh", "-c", 'echo "$TENURE_LEASE_TOKEN"', timeout=40
    )
    assert (second.returncode, second.stdout, second.stderr) == (0, "2\n", "")
    after = admin.get(f"/v1/leases/{KEY}").json()["lease"]
    assert (after["token"], after["state"]) == (2, "released")
    assert after["acquired_at"] >= lease["expires_at"]  # only once the first lease lapsed
    events = admin.get("/v1/events", params={"key": KEY}).json()["events"]
    first = [e["type"] for e in events if e["token"] == 1]
    assert first[0] == "acquired" and first[-1] == "expired", first  # nobody released it


def test_the_parent_death_signal_alone_kills_cmd(
    served: tuple[Serve, Shell, httpx.Client], tmp_path: Path, cleanup: list[int]
) -> None:
    _, jo, _ = served
    pid = tmp_path / "pid"
    run = jo.popen("run", KEY, "--ttl", "2s", "--", "sh", "-c", f'echo $$ > "{pid}"; exec sleep 60')
    cmd = read_int(pid)
    cleanup += [run.pid, cmd]
    watchdogs = [
        p
        for p in children(run.pid)
        if b"tenure-watchdog" in Path(f"/proc/{p}/cmdline").read_bytes()
    ]
    assert len(watchdogs) == 1 and cmd in children(run.pid)
    os.kill(watchdogs[0], signal.SIGKILL)
    time.sleep(0.2)
    assert alive(cmd)  # the watchdog's death alone does nothing
    kill_9(run)
    wait_for(lambda: not alive(cmd), timeout=5, what="CMD to die")
