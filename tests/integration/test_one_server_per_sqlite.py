"""One server per SQLite file.

``tenure serve`` holds an exclusive lock on ``<db>.lock`` while it runs: a second server on the
same file refuses to start (exit 1) naming the first (its pid, address and start), and starts
once the first is gone, even ``kill -9``ed (the kernel drops the lock with its holder). The
commands that work on the database directly keep working beside the running server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import tenure
from procs import ServeAt, cli, free_port


def serve_argv(db: str, port: int) -> list[str]:
    return [sys.executable, "-m", "tenure.cli", "serve", "--db", db, "--port", str(port)]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}


def test_a_second_server_refuses_naming_the_first_and_starts_once_it_is_killed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tenure.db"
    db = f"sqlite:///{path}"
    first = ServeAt(db)
    second: ServeAt | None = None
    try:
        port = free_port()
        refused = subprocess.run(
            serve_argv(db, port), capture_output=True, text=True, timeout=60, env=env()
        )
        assert refused.returncode == 1, refused.stderr
        said = refused.stderr
        assert f"another tenure server already serves {path}" in said, said
        assert f"pid {first.proc.pid}" in said and f"http://127.0.0.1:{first.port}" in said
        holder = json.loads(Path(f"{path}.lock").read_text())
        assert holder["pid"] == first.proc.pid and holder["started"] in said
        assert oct(os.stat(f"{path}.lock").st_mode & 0o777) == "0o600"

        # beside the server, the commands on the database itself still work
        token = cli("principal", "add", "root", "--role", "admin", "--db", db).stdout.strip()
        with tenure.Client(db, principal="cron") as direct:
            assert direct.acquire("beside").token > 0
        with first.http(token) as http:
            assert http.get("/v1/leases/beside").json()["lease"]["holder"] == "cron"

        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(timeout=10)
        second = ServeAt(db)  # the lock went with the killed process
        with second.http(token) as http:
            assert http.get("/v1/me").status_code == 200
        assert json.loads(Path(f"{path}.lock").read_text())["pid"] == second.proc.pid
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_a_lock_that_cannot_be_made_stops_the_server(tmp_path: Path) -> None:
    """Fail closed: a server that could not be told apart from a second one does not start."""
    (tmp_path / "t.db.lock").mkdir()  # where the lock file goes: a directory, not a file
    done = cli(
        "serve", "--db", f"sqlite:///{tmp_path}/t.db", "--port", str(free_port()), check=False
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "cannot make the server lock" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t.db").exists()  # nothing was opened
