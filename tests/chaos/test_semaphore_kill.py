"""A semaphore of N slots under N+2 contending ``tenure run --slots N`` processes, some of them
``kill -9``ed while their command runs: never more than N commands inside at once.

Each command logs when it enters and leaves, with its slot lease's token (distinct per grant) and
its ``run``'s pid. A ``run`` killed with ``kill -9`` takes its command with it; its slot is
free only after its lease's deadline, which is after the kill (``run`` renews it while alive), so
a killed command's stay is counted until the kill. Bounded: a fixed number of launches, each
command under a second, the whole under a minute.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tenure
from procs import Serve, Shell, alive
from tenure.service.principals import Principals

SLOTS = 2
PROCS = SLOTS + 2
LAUNCHES = 16
KILLS = 4


def token_for(db: str, name: str) -> str:
    store = tenure.open_store(db)
    try:
        return Principals(store).bootstrap(name, "human", ()).token
    finally:
        store.close()


@pytest.fixture
def jo(store_url: str, tmp_path: Path) -> Iterator[Shell]:
    token = token_for(store_url, "jo")
    server = Serve(store_url)
    try:
        yield Shell(server.url, token, tmp_path / "jo")
    finally:
        server.kill()


def stays(log: Path, killed: dict[int, float], ended: float) -> list[tuple[float, float, int]]:
    """``(enter, leave, token)`` of each command from the log; a command without a leave line
    was killed with its run (it leaves at the kill) or is still inside at ``ended``."""
    enter: dict[int, tuple[float, int]] = {}
    leave: dict[int, float] = {}
    for line in log.read_text().splitlines():
        what, token, run_pid, at = line.split()
        if what == "enter":
            enter[int(token)] = (float(at), int(run_pid))
        else:
            leave[int(token)] = float(at)
    return [
        (at, leave.get(token, killed.get(pid, ended)), token) for token, (at, pid) in enter.items()
    ]


def most_inside(intervals: list[tuple[float, float, int]]) -> int:
    edges = sorted([(a, 1) for a, _, _ in intervals] + [(b, -1) for _, b, _ in intervals])
    inside = most = 0
    for _, step in edges:  # a leave sorts before an enter at the same instant (-1 < 1)
        inside += step
        most = max(most, inside)
    return most


def test_never_more_than_n_inside_while_holders_are_killed(jo: Shell, tmp_path: Path) -> None:
    log = tmp_path / "inside.log"
    log.touch()
    script = (
        f'echo enter $TENURE_LEASE_TOKEN $PPID $(date +%s.%N) >> "{log}"; sleep 0.6; '
        f'echo leave $TENURE_LEASE_TOKEN $PPID $(date +%s.%N) >> "{log}"'
    )
    args = ("run", "gpu", "--slots", str(SLOTS), "--ttl", "3s", "--wait", "40s", "--")
    running: list[subprocess.Popen[str]] = []
    killed: dict[int, float] = {}
    rng = random.Random(46)
    launched, deadline = 0, time.monotonic() + 60
    try:
        while (launched < LAUNCHES or running) and time.monotonic() < deadline:
            running = [p for p in running if p.poll() is None]
            while len(running) < PROCS and launched < LAUNCHES:
                running.append(jo.popen(*args, "sh", "-c", script))
                launched += 1
            inside = [int(x.split()[2]) for x in log.read_text().splitlines() if "enter" in x]
            victims = [p for p in running if p.pid in inside and p.pid not in killed]
            if len(killed) < KILLS and victims and rng.random() < 0.3:
                victim = rng.choice(victims)
                victim.send_signal(signal.SIGKILL)
                victim.wait(10)
                killed[victim.pid] = time.time()
            time.sleep(0.1)
    finally:
        for p in running:
            if alive(p.pid):
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)
    intervals = stays(log, killed, time.time())
    assert len(intervals) >= LAUNCHES // 2, log.read_text()
    assert killed, "no holder was killed while inside"
    assert len({t for _, _, t in intervals}) == len(intervals)  # one token per grant
    assert most_inside(intervals) <= SLOTS, log.read_text()
    assert most_inside(intervals) == SLOTS  # the slots were used, not one at a time
