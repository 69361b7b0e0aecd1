"""The command ``tenure agent setup claude-code`` writes for the hooks, run as Claude Code runs
it (``sh -c``, the event on stdin) when something keeps tenure's hook from running: whatever
it is, an edit gets exit 2 (Claude Code's blocking code; any other code lets the edit through)
and stderr says what is wrong and how to fix it.

- ``tenure`` not on ``PATH`` (no ``PATH`` at all): the hook still runs, by absolute paths;
- the interpreter missing (127), not executable (126), the hook module raising (1): exit 2 and
  the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tenure
from tenure.core.harness_settings import hook_command

SRC = str(Path(tenure.__file__).resolve().parent.parent)
PYTHON = os.path.abspath(sys.executable)
DOWN = "http://127.0.0.1:9"  # nothing listens there
SAYS = "tenure: the hook could not run (exit {code}: {what} did not start, or failed)"


def edit(cwd: Path) -> str:
    return json.dumps(
        {
            "session_id": "s-1",
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(cwd / "app.py"), "old_string": "a", "new_string": "b"},
        }
    )


def heartbeat(cwd: Path) -> str:
    said = {"session_id": "s-1", "cwd": str(cwd), "hook_event_name": "PostToolUse"}
    return json.dumps({**said, "tool_name": "Bash"})


def run(command: str, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``command`` as Claude Code runs a command hook: by a shell, the event on stdin; with
    only ``env`` in the environment (no ``PATH`` unless given)."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=stdin,
        capture_output=True,
        text=True,
        env={"TENURE_URL": DOWN, "TENURE_TOKEN": "tnr_x", "HOME": "/nonexistent", **env},
        timeout=60,
        check=False,
    )


def written(tmp_path: Path) -> str:
    """The command hook's command that setup writes into a project's settings."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env["HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "tenure.cli", "agent", "setup", "claude-code", "--project"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads((repo / ".claude" / "settings.json").read_text())
    (hook,) = doc["hooks"]["PreToolUse"][0]["hooks"]
    return str(hook["command"])


def test_the_written_command_runs_without_tenure_on_the_path(tmp_path: Path) -> None:
    command = written(tmp_path)
    assert command == hook_command("tenure", PYTHON, SRC)
    done = run(command, edit(tmp_path))  # no PATH: neither tenure nor git nor python found
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"tenure_unreachable: tenure at {DOWN} could not check")
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    quiet = run(command, heartbeat(tmp_path))
    assert (quiet.returncode, quiet.stdout.strip()) == (0, "{}")
    assert f"tenure: {DOWN} not reached" in quiet.stderr


def test_a_missing_interpreter_blocks_the_edit(tmp_path: Path) -> None:
    gone = str(tmp_path / "moved-venv" / "bin" / "python")
    done = run(hook_command("tenure", gone, SRC), edit(tmp_path))
    assert done.returncode == 2
    assert SAYS.format(code=127, what=gone) in done.stderr
    assert "Fix: run tenure agent setup claude-code again" in done.stderr


def test_an_interpreter_that_cannot_be_executed_blocks_the_edit(tmp_path: Path) -> None:
    copy = tmp_path / "python"
    shutil.copy(os.path.realpath(sys.executable), copy)
    copy.chmod(0o644)
    done = run(hook_command("tenure", str(copy), SRC), edit(tmp_path))
    assert done.returncode == 2
    assert SAYS.format(code=126, what=copy) in done.stderr


def test_a_hook_module_that_raises_blocks_the_edit(tmp_path: Path) -> None:
    broken = tmp_path / "src"
    (broken / "tenure" / "hooks").mkdir(parents=True)
    (broken / "tenure" / "__init__.py").write_text("")
    (broken / "tenure" / "hooks" / "__init__.py").write_text("")
    module = broken / "tenure" / "hooks" / "command.py"
    module.write_text("raise RuntimeError('half installed')\n")
    done = run(hook_command("tenure", PYTHON, str(broken)), edit(tmp_path))
    assert done.returncode == 2
    assert "RuntimeError: half installed" in done.stderr  # the traceback, then the reason
    assert SAYS.format(code=1, what=PYTHON) in done.stderr


@pytest.mark.parametrize("form", ["exe", "python"])
def test_exit_codes_0_and_2_pass_as_they_are(tmp_path: Path, form: str) -> None:
    fake = tmp_path / "fake"
    fake.write_text('#!/bin/sh\ncat >/dev/null\necho "$FAKE_SAYS" >&2\nexit "$FAKE_CODE"\n')
    fake.chmod(0o755)
    command = hook_command(str(fake)) if form == "exe" else hook_command("x", str(fake), "/src")
    for code in ("0", "2"):
        done = run(command, edit(tmp_path), FAKE_CODE=code, FAKE_SAYS="theirs")
        assert (done.returncode, done.stderr) == (int(code), "theirs\n")
    done = run(command, edit(tmp_path), FAKE_CODE="3", FAKE_SAYS="theirs")
    assert done.returncode == 2 and SAYS.format(code=3, what=fake) in done.stderr
