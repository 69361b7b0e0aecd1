"""``tenure agent setup claude-code``: the real command, as a subprocess, in a scratch git
repository with ``HOME`` pointing at a scratch directory: the files it writes, the diff it shows,
twice changes nothing, ``--remove`` undoes it, bad input changes nothing. (No server is needed:
the command only writes the agent's settings.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tenure
from tenure.core.harness_settings import hook_command

SRC = str(Path(tenure.__file__).resolve().parent.parent)
#: what setup writes: this interpreter on the hook module, by absolute paths, guarded
HOOK = {"type": "command", "command": hook_command("tenure", os.path.abspath(sys.executable), SRC)}
#: a failed tool's heartbeat runs in the background: the model never waits for it (a
#: PostToolUse is waited on: it reports files a shell command changed under another's lease)
BEAT = {**HOOK, "async": True}
THEIRS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]},
    "unknownKey": [1, {"b": None}],
}


class Agent:
    """A user in a project: the repository, their HOME, the command."""

    def __init__(self, tmp: Path) -> None:
        self.home, self.repo = tmp / "home", tmp / "repo"
        self.home.mkdir()
        (self.repo / "src").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)

    def __call__(
        self, *args: str, cwd: Path | None = None, **more: str
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        env.update(HOME=str(self.home), TENURE_URL="http://127.0.0.1:7777", COLUMNS="200")
        env.update(TENURE_CONFIG_DIR=str(self.home / "config"), **more)
        return subprocess.run(
            [sys.executable, "-m", "tenure.cli", "agent", "setup", *args],
            cwd=cwd or self.repo / "src",
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def ok(self, *args: str, **env: str) -> str:
        done = self(*args, **env)
        assert done.returncode == 0, (done.stdout, done.stderr)
        return done.stdout


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(tmp_path)


def load(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_project_setup_writes_hooks_and_mcp_at_the_repository_root(agent: Agent) -> None:
    settings, mcp = agent.repo / ".claude" / "settings.json", agent.repo / ".mcp.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS, indent=2) + "\n")
    shown = agent.ok("claude-code", "--project")  # run from src/: the root is found by git
    assert f"--- {settings}\n+++ {settings}\n@@ " in shown
    assert '+        "matcher": "Edit|Write|MultiEdit|NotebookEdit",' in shown
    assert f"--- /dev/null\n+++ {mcp}\n" in shown
    assert f"{settings}: updated" in shown and f"{mcp}: created" in shown
    doc = load(settings)
    assert {k: doc[k] for k in ("permissions", "unknownKey")} == {
        "permissions": THEIRS["permissions"],
        "unknownKey": THEIRS["unknownKey"],
    }
    hooks = doc["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["PreToolUse"] == [
        THEIRS["hooks"]["PreToolUse"][0],  # type: ignore[index]
        {"matcher": "Edit|Write|MultiEdit|NotebookEdit", "hooks": [HOOK]},
    ]
    assert hooks["PostToolUse"] == [{"matcher": "*", "hooks": [HOOK]}]
    assert hooks["PostToolUseFailure"] == [{"matcher": "*", "hooks": [BEAT]}]
    assert hooks["SessionEnd"] == [{"hooks": [HOOK]}]
    assert hooks["UserPromptSubmit"] == [{"hooks": [HOOK]}]
    assert settings.read_text().startswith('{\n  "permissions": {\n    "allow": [\n')
    assert load(mcp) == {
        "mcpServers": {"tenure": {"type": "stdio", "command": "tenure", "args": ["mcp"]}}
    }
    assert not (agent.home / ".claude").exists()  # the user's settings untouched

    texts = settings.read_text(), mcp.read_text()
    again = agent.ok("claude-code", "--project")
    assert again == f"{settings}: nothing to change\n{mcp}: nothing to change\n"
    assert (settings.read_text(), mcp.read_text()) == texts

    removed = agent.ok("claude-code", "--project", "--remove")
    assert f"--- {mcp}\n+++ /dev/null\n" in removed and f"{mcp}: deleted" in removed
    assert load(settings) == THEIRS and not mcp.exists()
    assert agent.ok("claude-code", "--remove").count(": nothing to change\n") == 2


def test_user_setup_writes_into_home(agent: Agent) -> None:
    settings, state = agent.home / ".claude" / "settings.json", agent.home / ".claude.json"
    state.write_text('{"numStartups": 3, "projects": {"/x": {"allowedTools": []}}}')
    agent.ok("claude-code", "--user")
    assert load(settings)["hooks"]["SessionEnd"] == [{"hooks": [HOOK]}]  # type: ignore[index]
    assert load(state) == {
        "numStartups": 3,
        "projects": {"/x": {"allowedTools": []}},
        "mcpServers": {"tenure": {"type": "stdio", "command": "tenure", "args": ["mcp"]}},
    }
    assert not (agent.repo / ".claude").exists() and not (agent.repo / ".mcp.json").exists()
    assert agent.ok("claude-code", "--user").count("nothing to change") == 2
    agent.ok("claude-code", "--user", "--remove")
    assert not settings.exists()  # ours was all it held
    assert load(state) == {"numStartups": 3, "projects": {"/x": {"allowedTools": []}}}


def test_http_form_and_dry_run(agent: Agent) -> None:
    done = agent("claude-code", "--http", "--token-env", "AGENT_TOKEN", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dry_run"] and [f["created"] for f in report["files"]] == [True, True]
    assert '"url": "http://127.0.0.1:7777/v1/hooks/claude-code"' in report["files"][0]["diff"]
    assert '"Authorization": "Bearer $AGENT_TOKEN"' in report["files"][0]["diff"]
    assert '"url": "http://127.0.0.1:7777/mcp"' in report["files"][1]["diff"]
    assert not (agent.repo / ".claude").exists() and not (agent.repo / ".mcp.json").exists()

    agent.ok("claude-code", "--http", TENURE_TOKEN="tnr_x")  # (no server: a warning)
    hook = load(agent.repo / ".claude" / "settings.json")["hooks"]["PreToolUse"][0]["hooks"][0]  # type: ignore[index]
    assert hook["type"] == "http" and hook["allowedEnvVars"] == ["TENURE_TOKEN", "TENURE_REPO"]
    agent.ok("claude-code")  # back to the command form: replaced, not added
    groups = load(agent.repo / ".claude" / "settings.json")["hooks"]["PreToolUse"]  # type: ignore[index]
    assert groups == [{"matcher": "Edit|Write|MultiEdit|NotebookEdit", "hooks": [HOOK]}]


def test_bad_input_changes_nothing(agent: Agent) -> None:
    settings, mcp = agent.repo / ".claude" / "settings.json", agent.repo / ".mcp.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    mcp.write_text('{"mcpServers": {,}}')
    done = agent("claude-code")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"tenure: invalid_settings: {mcp} is not valid JSON (line 1")
    assert "nothing was changed" in done.stderr
    assert settings.read_text() == "{}\n" and mcp.read_text() == '{"mcpServers": {,}}'

    mcp.unlink()
    settings.unlink()
    settings.mkdir()  # a settings "file" that cannot be read
    done = agent("claude-code")
    assert done.returncode == 2 and done.stderr.startswith(
        f"tenure: unreadable_settings: {settings} cannot be read"
    ), done.stderr
    assert not mcp.exists()  # the other file is not written either
    settings.rmdir()
    settings.write_text("{}\n")

    done = agent("claude-code", "--http", "--token-env", "$AGENT_TOKEN")
    assert done.returncode == 2 and "is not an environment variable's name" in done.stderr

    for harness, said in (("cursor", "Cursor is not set up by this command yet"),
                          ("vim", "'vim' is not a harness tenure knows")):  # fmt: skip
        done = agent(harness)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert "unknown_harness" in done.stderr and "claude-code" in done.stderr
    assert settings.read_text() == "{}\n"


def test_the_help_lists_it(agent: Agent) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tenure.cli", "agent", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "setup" in done.stdout and "Write tenure's hooks" in done.stdout


def test_setup_warns_of_paths_that_may_not_last(tmp_path: Path) -> None:
    from tenure.cli.agent_setup import launch_warnings

    venv = tmp_path / "now" / ".venv"
    venv.mkdir(parents=True)
    python = str(venv / "bin" / "python")
    (venv / "pyvenv.cfg").write_text(
        "home = /usr/bin\nversion = 3.12.1\ncommand = /usr/bin/python3 -m venv /old/.venv\n"
    )
    said = launch_warnings(python, "/opt/lib/site-packages", str(venv))
    assert any("in a temporary directory: when it is cleaned up" in w for w in said)
    assert f"this virtual environment was made at /old/.venv and moved to {venv}" in said[-1]
    (venv / "pyvenv.cfg").write_text(f"command = /usr/bin/python3 -m venv {venv}\n")
    assert not any("moved" in w for w in launch_warnings(python, "/opt/x", str(venv)))
    assert launch_warnings("/opt/venv/bin/python", "/opt/x", "/opt/venv") == []


def test_setup_prints_its_warnings_on_stderr(agent: Agent) -> None:
    done = agent("claude-code", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["warnings"] == [
        line.removeprefix("tenure: warning: ") for line in done.stderr.splitlines()
    ]


def test_http_setup_that_cannot_authenticate_is_refused(agent: Agent) -> None:
    settings = agent.repo / ".claude" / "settings.json"
    done = agent("claude-code", "--http")  # TENURE_TOKEN unset: Claude Code would send ""
    assert done.returncode == 2 and "no_token:" in done.stderr, done.stderr
    assert "$TENURE_TOKEN, which is not set here" in done.stderr
    assert "nothing was changed" in done.stderr and not settings.exists()
    dry = agent("claude-code", "--http", "--dry-run")  # a dry run says so, and writes nothing
    assert dry.returncode == 0 and "tenure: warning: no_token:" in dry.stderr
    unchecked = agent("claude-code", "--http", TENURE_TOKEN="tnr_x")  # no server on 7777
    assert unchecked.returncode == 0 and "could not be checked" in unchecked.stderr
    assert settings.exists()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_http_setup_asks_the_server_about_the_token(agent: Agent, live_server: Any) -> None:
    settings = agent.repo / ".claude" / "settings.json"
    url = live_server.url
    refused = agent("claude-code", "--http", TENURE_URL=url, TENURE_TOKEN="tnr_not_a_token")
    assert refused.returncode == 2 and f"no_token: {url} refuses the token" in refused.stderr
    assert not settings.exists()
    jo = live_server.token_for("jo")
    done = agent("claude-code", "--http", TENURE_URL=url, TENURE_TOKEN=jo)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert settings.exists()


def test_command_setup_without_any_token_warns(agent: Agent) -> None:
    done = agent("claude-code")
    assert done.returncode == 0
    assert "tenure: warning: no tenure token here" in done.stderr
    assert "tenure agent doctor claude-code" in done.stderr
    again = agent("claude-code", TENURE_TOKEN="tnr_x")
    # (a checkout under /tmp may still be warned of: its interpreter is in a temporary place)
    assert again.returncode == 0 and "no tenure token here" not in again.stderr
