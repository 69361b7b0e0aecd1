"""Two ``./dev`` at once never install into one ``.venv``: while one holds ``.venv.lock`` the
other says it waits, and for whom, and goes on when the lock is released. Set up, ``./dev`` says
nothing and leaves stdout to the command (``export TENURE_TOKEN=$(./dev tenure ...)``)."""

from __future__ import annotations

import fcntl
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]


def dev(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    return subprocess.Popen(
        [str(REPO / "dev"), *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_lines(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("(end of output)")


def test_a_second_dev_waits_while_another_sets_up() -> None:
    with open(REPO / ".venv.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # blocks while a real ./dev sets up: then it is ours
        lock.seek(0)
        lock.truncate()
        lock.write("`./dev test` (pid 4242)\n")
        lock.flush()
        second = dev("tenure", "--version")
        assert second.stderr is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=read_lines, args=(second.stderr, lines), daemon=True).start()
        said = lines.get(timeout=60)
        assert "waiting" in said and "`./dev test` (pid 4242)" in said, said
        assert second.poll() is None, "./dev went on while another held .venv.lock"
        fcntl.flock(lock, fcntl.LOCK_UN)
    out, _ = second.communicate(timeout=120)
    assert second.returncode == 0
    assert out.startswith("tenure, version"), out


def test_once_set_up_dev_says_nothing_and_leaves_stdout_to_the_command() -> None:
    first = dev("tenure", "--version")
    first.communicate(timeout=120)  # sets up whatever is missing
    again = dev("tenure", "--version")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and out.startswith("tenure, version") and err == "", (out, err)
