"""The real Claude Code binary, driven by a scripted model (:mod:`_model_api`), with tenure's
hooks installed by the real ``tenure agent setup claude-code`` in a temporary git repository.

The binary is the npm package ``@anthropic-ai/claude-code`` at :data:`VERSION`, installed by
``./dev claude-code`` (``./dev test`` runs it) under ``.cache/claude-code/``. Without it the
tests are skipped, except under ``CI`` (set), where they fail: CI must run them.

No traffic leaves the machine: the model is the stand-in on 127.0.0.1, ``HTTP(S)_PROXY`` point
at a :class:`Sink` on loopback that accepts and closes every connection (and counts them), and
telemetry, error reports, the auto-updater and other non-essential traffic are switched off.
Each run has a fresh ``HOME`` and an environment built from nothing (no developer's
``ANTHROPIC_*`` or ``TENURE_*`` leaks in), and is killed (its whole process group) when it
outlives its timeout.

- :func:`setup_repo`: a git repository with tenure's hooks and MCP server in it.
- :class:`ClaudeCode`: ``run(repo, script, prompt)`` one ``claude -p`` session to its end;
  ``start(...)`` one left running (a session that holds its files), ``Session.stop()`` ends it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _hooks import git, make_repo
from _model_api import ModelApi, ToolResult, Turn

from outside import absent
from uvicorn_thread import Served

VERSION = "2.1.332"  # the pinned version; ./dev installs exactly this one
ROOT = Path(__file__).resolve().parents[2]
CLAUDE = ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
VENV_BIN = str(Path(sys.executable).parent)
TENURE = str(Path(VENV_BIN) / "tenure")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# Tools the runs may use without asking (there is nobody to ask in -p mode). Edits are let
# through by --permission-mode acceptEdits; tenure's hooks are what may still block them.
ALLOWED = "Bash,Read,Write,Edit,MultiEdit,Agent,Task,mcp__tenure"
RUN_TIMEOUT = 90.0


def claude_binary() -> Path:
    """The installed binary; skipped when absent (failed under ``CI``)."""
    if CLAUDE.exists():
        return CLAUDE
    absent(f"Claude Code is not installed at {CLAUDE}: run ./dev claude-code")


class Sink:
    """A proxy that refuses everything: accepts a connection, records it, closes it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.attempts: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    self.attempts.append(conn.recv(200))
                except OSError:
                    self.attempts.append(b"")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def setup_repo(
    path: Path,
    url: str,
    token: str,
    *args: str,
    origin: str | None = "git@github.com:acme/shop.git",
) -> Path:
    """A git repository at ``path`` (``src/app.py`` and ``src/shared.py`` committed) with
    tenure's hooks written by ``tenure agent setup claude-code --project ARGS``, run there by a
    user with tenure on their ``PATH`` and ``token`` in ``TENURE_TOKEN``. The setup files are
    committed too, so the working tree starts clean."""
    repo = make_repo(path, origin)
    (repo / "src" / "shared.py").write_text("shared = 1\n")
    env = {
        "PATH": f"{VENV_BIN}:{SYSTEM_PATH}",
        "HOME": str(path.parent / "setup-home"),
        "TENURE_URL": url,
        "TENURE_CONFIG_DIR": str(path.parent / "setup-home" / "tenure"),
        "TENURE_TOKEN": token,
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        [TENURE, "agent", "setup", "claude-code", "--project", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tenure setup")
    return repo


@dataclass
class Run:
    """One finished ``claude -p`` session: its exit status, output and what the model saw."""

    returncode: int
    stdout: str
    stderr: str
    api: ModelApi
    marker: str
    timed_out: bool = False
    output: dict[str, Any] | None = field(default=None)

    @property
    def session_id(self) -> str | None:
        return None if self.output is None else self.output.get("session_id")

    def results(self, name: str | None = None) -> list[ToolResult]:
        """The tool results of this session's own conversation (``name``'s calls only)."""
        got = self.api.results(self.marker)
        return got if name is None else [r for r in got if r.name == name]

    def told_after(self, result: ToolResult) -> str:
        """All the binary told the model from ``result`` on: the result itself and whatever
        came with or after it (hook feedback, system reminders), as one text."""
        return self.api.told_after(result.tool_use_id)

    def describe(self) -> str:
        """For assertion messages: what happened, briefly."""
        told = [(r.name, r.is_error, r.content[:400]) for r in self.api.results()]
        said = self.stdout[-600:] if self.output is None else self.output.get("result")
        return (
            f"exit {self.returncode} (timed out: {self.timed_out}); said: {said!r}\n"
            f"stderr: {self.stderr[-1500:]}\ntool results: {told}"
        )


class Session:
    """A ``claude -p`` process under way (see :meth:`ClaudeCode.start`)."""

    def __init__(
        self, proc: subprocess.Popen[str], api: ModelApi, served: Served, marker: str
    ) -> None:
        self.proc = proc
        self.api = api
        self.served = served
        self.marker = marker
        self.run: Run | None = None

    def wait(self, timeout: float = RUN_TIMEOUT) -> Run:
        """The run, once it has ended (killed, its process group with it, past ``timeout``)."""
        if self.run is not None:
            return self.run
        timed_out = False
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill()
            out, err = self.proc.communicate(timeout=30)
        self.served.stop()
        run = Run(self.proc.returncode, out, err, self.api, self.marker, timed_out)
        try:
            run.output = json.loads(out) if out.strip() else None
        except json.JSONDecodeError:
            run.output = None
        self.run = run
        return run

    def stop(self) -> Run:
        """End the session as a user's Ctrl-C does (SIGINT), and wait for it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
        return self.wait(30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)


class ClaudeCode:
    """Runs the real binary against a scripted model, with a tenure server's URL and a token
    in its environment (the hooks and ``tenure mcp`` inherit them)."""

    def __init__(self, tmp_path: Path, url: str, token: str | None) -> None:
        self.binary = claude_binary()
        self.tmp = tmp_path
        self.url = url
        self.token = token
        self.sink = Sink()
        self.homes = 0
        self.sessions: list[Session] = []

    def env(self, path: str | None = None, **extra: str) -> dict[str, str]:
        """The environment of one run: a fresh ``HOME``; ``PATH`` has the venv (where the
        ``tenure`` command is) unless ``path`` is given; ``extra`` on top."""
        self.homes += 1
        home = self.tmp / f"claude-home-{self.homes}"
        home.mkdir(parents=True)
        (home / ".claude").mkdir()
        (home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
        # the project's .mcp.json servers (tenure's, written by setup) are approved
        (home / ".claude" / "settings.json").write_text(
            json.dumps({"enableAllProjectMcpServers": True})
        )
        env = {
            "PATH": path if path is not None else f"{VENV_BIN}:{SYSTEM_PATH}",
            "HOME": str(home),
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "TMPDIR": str(home),
            "ANTHROPIC_API_KEY": "sk-ant-api03-stand-in",
            "HTTP_PROXY": self.sink.url,
            "HTTPS_PROXY": self.sink.url,
            "http_proxy": self.sink.url,
            "https_proxy": self.sink.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "TENURE_URL": self.url,
            "TENURE_CONFIG_DIR": str(home / "tenure"),
        }
        if self.token is not None:
            env["TENURE_TOKEN"] = self.token
        if "PYTHONPATH" in os.environ:  # the tier run against another source tree
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update(extra)
        return env

    def start(
        self,
        repo: Path,
        script: dict[str, list[Turn]],
        prompt: str,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> Session:
        """Start one ``claude -p PROMPT`` in ``repo`` (or ``cwd``); the model plays ``script``.
        ``prompt`` must hold one of the script's markers (its conversation is the session's)."""
        marker = next((m for m in sorted(script, key=len, reverse=True) if m in prompt), None)
        assert marker is not None, f"no marker of the script in {prompt!r}"
        api = ModelApi(script)
        served = Served(api.app)
        run_env = {**(env if env is not None else self.env()), "ANTHROPIC_BASE_URL": served.url}
        command = [
            str(self.binary),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            ALLOWED,
            *args,
        ]
        proc = subprocess.Popen(
            command,
            cwd=cwd or repo,
            env=run_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: a kill takes hooks and MCP too
        )
        session = Session(proc, api, served, marker)
        self.sessions.append(session)
        return session

    def run(
        self,
        repo: Path,
        script: dict[str, list[Turn]],
        prompt: str,
        *,
        timeout: float = RUN_TIMEOUT,
        **kwargs: Any,
    ) -> Run:
        """One session, start to end (see :meth:`start`)."""
        return self.start(repo, script, prompt, **kwargs).wait(timeout)

    def close(self) -> None:
        for session in self.sessions:
            session.kill()
            session.wait(30)
        self.sink.stop()
