"""Helpers of the harness-hook tests: a real git repository, Claude Code's recorded events
(``fixtures/claude_code``) placed in it, and the two hook forms: the HTTP hook (the event
POSTed to the server as Claude Code's ``"type": "http"`` hook does) and the command hook (the
real ``tenure hook claude-code`` script, the event on its stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
RECORDED_ROOT = "/home/dev/shop"  # the repository the events were recorded in
TENURE = str(Path(sys.executable).parent / "tenure")  # the console script, as a harness runs it
SESSION_A = "8c35adc1-5f0e-4c1b-9a57-0d2f1e9b7a11"
SESSION_B = "f41e0b9c-2d3a-4e8f-b6c5-7a9d1c2e3f40"
TASK_A = "prompt-a-refactor-checkout"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def make_repo(path: Path, origin: str | None = "git@github.com:acme/shop.git") -> Path:
    """A git repository with one commit (``src/app.py``), its ``origin`` set when given."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("x = 1\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    if origin:
        git(path, "remote", "add", "origin", origin)
    return path


def event(name: str, root: Path | str, **changes: Any) -> dict[str, Any]:
    """The recorded event ``name`` as if recorded in ``root``, with ``changes``."""
    text = (FIXTURES / f"{name}.json").read_text().replace(RECORDED_ROOT, str(root))
    return {**json.loads(text), **changes}


@dataclass
class Outcome:
    """What the harness gets: blocked or not, the reason the model reads, the decision JSON."""

    blocked: bool
    reason: str
    reply: dict[str, Any] | None
    status: int = 200  # the HTTP hook's status; the command's exit code for the command hook


class HttpHook:
    """Claude Code's HTTP hook: POST the event with the bearer header; nothing else."""

    form = "http"

    def __init__(self, url: str, token: str, headers: dict[str, str] | None = None) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", **(headers or {})}

    def send(self, ev: dict[str, Any] | str) -> Outcome:
        body = ev if isinstance(ev, str) else json.dumps(ev)
        got = self.http.post(
            "/v1/hooks/claude-code",
            content=body,
            headers={**self.headers, "Content-Type": "application/json"},
        )
        reply = got.json()
        decision = reply.get("hookSpecificOutput") if isinstance(reply, dict) else None
        blocked = (
            got.status_code == 200
            and bool(decision)
            and decision.get("permissionDecision") == "deny"
        )
        reason = decision["permissionDecisionReason"] if blocked else json.dumps(reply)
        return Outcome(blocked, reason, reply, got.status_code)

    def close(self) -> None:
        self.http.close()


class CommandHook:
    """Claude Code's command hook: ``tenure hook claude-code``, the event on stdin; exit code 2
    blocks and its stderr is what the model reads."""

    form = "command"

    def __init__(self, url: str, token: str, home: Path, **env: str) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        self.env.pop("CLAUDE_PROJECT_DIR", None)
        self.env.update(
            TENURE_URL=url, TENURE_TOKEN=token, TENURE_CONFIG_DIR=str(home / "config"), **env
        )

    def send(self, ev: dict[str, Any] | str) -> Outcome:
        body = ev if isinstance(ev, str) else json.dumps(ev)
        done = subprocess.run(
            [TENURE, "hook", "claude-code"],
            input=body,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        assert done.returncode in (0, 2), (done.returncode, done.stderr)
        reply = json.loads(done.stdout) if done.stdout.strip() else None
        blocked = done.returncode == 2
        return Outcome(blocked, done.stderr.strip(), reply, done.returncode)

    def close(self) -> None:
        pass
