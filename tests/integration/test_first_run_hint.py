"""The first start's hint is a command that works as printed, even where ``$USER`` is empty
(containers, cron, CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from procs import Serve

BIN = Path(sys.executable).parent


def test_the_printed_command_creates_an_admin_with_user_unset(tmp_path: Path) -> None:
    server = Serve(f"sqlite:///{tmp_path / 'first.db'}")
    _, stderr = server.stop()
    lines = [line.strip() for line in stderr.splitlines() if "tenure principal add" in line]
    assert len(lines) == 1, stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env.update(USER="", PATH=f"{BIN}{os.pathsep}{env['PATH']}", HOME=str(tmp_path))
    script = f'{lines[0]}\nset -e\ntest -n "$TENURE_TOKEN"\nprintf %s "$TENURE_TOKEN"\n'
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, (lines[0], done.stdout, done.stderr)
    assert done.stdout.startswith("tnr_"), done.stdout
