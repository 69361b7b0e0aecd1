"""``tenure agent setup``: write tenure's hooks and MCP server into a coding agent's settings.

The merge itself is :mod:`tenure.core.harness_settings` (pure); this module finds the files,
reads them, prints the diff and writes them. Every file is read and checked before any is
written, so a file that cannot be read (or is not valid JSON) leaves all of them untouched.
(``tenure.cli.agent`` is something else: the supervisor of a dispatched agent.)
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.core import harness_settings as hs
from tenure.errors import InvalidRequest

HARNESSES = ("claude-code",)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OTHERS = {
    "codex": "Codex",
    "cursor": "Cursor",
    "gemini": "Gemini CLI",
    "gemini-cli": "Gemini CLI",
}


@dataclass
class Change:
    """One settings file: what it holds now and what it will hold."""

    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is (or stays) absent
    note: str | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        name = str(self.path)
        return "".join(
            difflib.unified_diff(
                old,
                new,
                "/dev/null" if self.before is None else name,
                "/dev/null" if self.after is None else name,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "changed": self.changed,
            "created": self.before is None and self.after is not None,
            "deleted": self.before is not None and self.after is None,
            "diff": self.diff(),
            "note": self.note,
        }


@click.group(
    epilog="\b\nExamples:\n  tenure agent setup claude-code --project\n"
    "  tenure agent setup claude-code --project --remove"
)
def agent() -> None:
    """Coding agents (Claude Code…) coordinated through tenure: `tenure agent setup`."""


@verb(
    agent,
    "setup",
    summary="Write tenure's hooks and MCP server into a coding agent's settings.",
    example="tenure agent setup claude-code --project\n"
    "tenure agent setup claude-code --user --dry-run\n"
    "tenure agent setup claude-code --project --http\n"
    "tenure agent setup claude-code --project --remove",
)
@click.argument("harness", metavar="HARNESS")
@click.option("--project", "scope", flag_value="project", default=True,
              help="This project's settings: .claude/settings.json and .mcp.json at the "
              "repository root (default).")  # fmt: skip
@click.option("--user", "scope", flag_value="user",
              help="Your user settings: ~/.claude/settings.json and ~/.claude.json.")  # fmt: skip
@click.option("--remove", is_flag=True, help="Take out exactly what setup added.")
@click.option("--dry-run", is_flag=True, help="Show the diff; write nothing.")
@click.option("--http", is_flag=True, help="HTTP hooks answered by the server itself (no "
              "process per tool call) and the server's /mcp, instead of commands.")  # fmt: skip
@click.option("--token-env", default="TENURE_TOKEN", show_default=True,
              help="With --http: the environment variable holding the bearer token.")  # fmt: skip
@click.option("--exe", default=None,
              help="The tenure command the hooks and the MCP server run. Default: the hooks "
              "run this Python interpreter on tenure's hook module by their absolute paths, "
              "the MCP server runs `tenure`.")  # fmt: skip
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              help="The project (default: the git repository around the current directory, "
              "else the current directory).")  # fmt: skip
def agent_setup(
    harness: str,
    scope: str,
    remove: bool,
    dry_run: bool,
    http: bool,
    token_env: str,
    exe: str | None,
    directory: Path | None,
) -> None:
    """Add to HARNESS's settings the hooks that take a lease on each file before the agent
    edits it (files/<repo>/<path>, in the agent's session), heartbeat that session's leases
    after every tool call and release them when the session ends; and tenure's MCP server.
    Prints a unified diff of each file it changes. Running it again changes nothing; every
    other key, hook and server in the files is kept. --remove takes out exactly what it added.
    Supported: claude-code (docs/agents.md shows the configuration for Codex, Cursor and
    Gemini CLI)."""
    check_harness(harness)
    if not ENV_NAME.fullmatch(token_env):
        raise InvalidRequest(
            f"invalid_request: --token-env {token_env!r} is not an environment variable's "
            "name. Give a name such as AGENT_TOKEN (no $)",
            field="token_env",
        )
    run = cli_of()
    python, src = (None, None) if exe else launcher()
    form = hs.Form(exe or "tenure", run.url if http else None, token_env, python, src)
    files = claude_files(scope, directory)
    changes = [
        plan(files[0], lambda d: hs.remove_hooks(d) if remove else hs.add_hooks(d, form)),
        plan(files[1], lambda d: mcp_change(d, form, remove)),
    ]
    if not dry_run:
        for change in changes:
            write(change)
    warnings = [] if remove or http else launch_warnings(python, src)
    doc = {"harness": harness, "scope": scope, "dry_run": dry_run, "remove": remove,
           "files": [c.to_dict() for c in changes], "warnings": warnings}  # fmt: skip
    for warning in warnings:
        click.echo(f"tenure: warning: {warning}", err=True)
    run.out.emit(doc, lambda: report(changes, dry_run))


def launcher() -> tuple[str, str]:
    """The interpreter running this command and the directory tenure is imported from: what
    the command hook runs, by absolute paths (the harness's ``PATH`` plays no part)."""
    package_root = Path(__file__).resolve().parents[2]  # .../tenure/cli/agent_setup.py
    return os.path.abspath(sys.executable), str(package_root)


def launch_warnings(python: str | None, src: str | None, prefix: str = sys.prefix) -> list[str]:
    """What may make the written command stop working: a temporary directory, a virtual
    environment (``prefix``, the running one's by default) that was moved after it was made."""
    said = []
    temp = {os.path.realpath(d) for d in (tempfile.gettempdir(), "/tmp", "/var/tmp")}
    for path in (p for p in (python, src) if p):
        real = os.path.realpath(path)
        if any(real == t or real.startswith(t + os.sep) for t in temp):
            said.append(
                f"the hooks run {path}, in a temporary directory: when it is cleaned up every "
                "edit is blocked. Install tenure somewhere lasting and run setup again"
            )
    made_at = venv_made_at(Path(prefix))
    if python and made_at is not None and os.path.realpath(made_at) != os.path.realpath(prefix):
        said.append(
            f"this virtual environment was made at {made_at} and moved to {prefix}: its "
            "scripts may still point at the old place. The hooks run its interpreter by "
            "path; recreate the environment there if they fail"
        )
    return said


def venv_made_at(prefix: Path) -> str | None:
    """Where the virtual environment at ``prefix`` was made (its ``pyvenv.cfg`` says, since
    Python 3.11), ``None`` when that is not known."""
    try:
        text = (prefix / "pyvenv.cfg").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "command" and " -m venv " in value:
            return value.rsplit(" -m venv ", 1)[1].strip().split(" ")[-1] or None
    return None


def check_harness(harness: str) -> None:
    if harness in HARNESSES:
        return
    other = OTHERS.get(harness.lower())
    said = (
        f"{other} is not set up by this command yet: docs/agents.md shows its hook configuration"
        if other
        else f"{harness!r} is not a harness tenure knows"
    )
    raise InvalidRequest(
        f"unknown_harness: {said}. Use one of: {', '.join(HARNESSES)}", field="harness"
    )


def claude_files(scope: str, directory: Path | None) -> tuple[Path, Path]:
    """The hooks' settings file and the MCP servers' file of Claude Code for ``scope``."""
    if scope == "user":
        home = Path.home()
        return home / ".claude" / "settings.json", home / ".claude.json"
    root = directory if directory is not None else project_root(Path.cwd())
    return root / ".claude" / "settings.json", root / ".mcp.json"


def project_root(cwd: Path) -> Path:
    """The git repository's top directory around ``cwd``, else ``cwd``."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return cwd
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else cwd


def plan(path: Path, change: Callable[[hs.Doc], hs.Doc | tuple[hs.Doc, str | None]]) -> Change:
    """What ``change`` does to the file at ``path`` (read and checked here, not written)."""
    before = read(path)
    doc = hs.parse(before or "", str(path))
    result = change(doc)
    new, note = result if isinstance(result, tuple) else (result, None)
    if new == doc:
        return Change(path, before, before, note)
    if not new:  # ours was all it held
        return Change(path, before, None, note)
    return Change(path, before, hs.render(new), note)


def mcp_change(doc: hs.Doc, form: hs.Form, remove: bool) -> tuple[hs.Doc, str | None]:
    if remove:
        return hs.remove_mcp(doc), None
    new, theirs = hs.add_mcp(doc, form)
    note = "an MCP server named tenure is already configured here: left as it is"
    return new, note if theirs else None


def read(path: Path) -> str | None:
    """The file's text, or None when it does not exist; refused when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequest(
            f"unreadable_settings: {path} cannot be read ({err}). Fix its permissions or "
            "encoding and run the command again; nothing was changed",
            field="settings",
        ) from None


def write(change: Change) -> None:
    """Write the new text atomically (a new file beside it, then renamed over it)."""
    if not change.changed:
        return
    if change.after is None:
        change.path.unlink(missing_ok=True)
        return
    change.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = change.path.with_name(f".{change.path.name}.tenure-{os.getpid()}")
    tmp.write_text(change.after, encoding="utf-8")
    if change.path.exists():
        os.chmod(tmp, change.path.stat().st_mode & 0o7777)
    tmp.replace(change.path)


def report(changes: list[Change], dry_run: bool) -> str:
    lines = [change.diff().rstrip("\n") for change in changes if change.changed]
    for change in changes:
        lines.append(f"{change.path}: {summary(change, dry_run)}")
        if change.note:
            lines.append(f"{change.path}: {change.note}")
    return "\n".join(lines)


def summary(change: Change, dry_run: bool) -> str:
    if not change.changed:
        return "nothing to change"
    verb_ = "would be " if dry_run else ""
    if change.before is None:
        return f"{verb_}created"
    if change.after is None:
        return f"{verb_}deleted (nothing else was in it)"
    return f"{verb_}updated"


cli.add_command(agent)
