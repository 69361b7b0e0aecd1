"""``tenure agent setup``: write tenure's hooks and MCP server into a coding agent's settings.

The merge itself is :mod:`tenure.core.harness_settings` (pure); this module finds the files,
reads them, prints the diff and writes them. Every file is read and checked before any is
written, so a file that cannot be read (or is not valid JSON) leaves all of them untouched.
(The supervisor of a dispatched agent is something else: :mod:`tenure.supervise.detached`.)
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
    warnings = [] if remove else can_authenticate(form, dry_run)
    warnings += [] if remove or http else launch_warnings(python, src)
    files = claude_files(scope, directory)
    changes = [
        plan(files[0], lambda d: hs.remove_hooks(d) if remove else hs.add_hooks(d, form)),
        plan(files[1], lambda d: mcp_change(d, form, remove)),
    ]
    if not dry_run:
        for change in changes:
            write(change)
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


def can_authenticate(form: hs.Form, dry_run: bool) -> list[str]:
    """Whether the hooks being written can authenticate: refused (``no_token``) for HTTP hooks
    whose token variable is unset here or whose token the server refuses (Claude Code would
    send an empty or refused bearer, and every edit would be blocked); the warnings otherwise
    (a command form without any token, a server that cannot be asked)."""
    if form.url is None:
        token, _ = cli_of().token_source
        if token:
            return []
        return ["no tenure token here (TENURE_TOKEN is unset and `tenure login` saved none "
                "for this server): the hooks will block every edit until Claude Code's "
                "environment has one. Check with `tenure agent doctor claude-code`"]  # fmt: skip
    token = os.environ.get(form.token_env, "")
    if not token:
        why = (f"no_token: the HTTP hooks send the bearer token from ${form.token_env}, which is "
               "not set here: Claude Code would send an empty token and every edit would be "
               f"blocked. export {form.token_env}=<a token from `tenure principal add NAME "
               "--kind agent`> in the environment Claude Code starts in, and run this again"
               )  # fmt: skip
        if dry_run:
            return [why]
        raise InvalidRequest(why + "; nothing was changed", field="token_env")
    return check_token(form, token, dry_run)


def check_token(form: hs.Form, token: str, dry_run: bool) -> list[str]:
    """Ask the server whether ``token`` authenticates: refused is an error, unreachable a
    warning (the server may not run yet)."""
    from tenure.client import Client, RetryPolicy
    from tenure.errors import TenureError, Unauthenticated

    assert form.url is not None
    try:
        once = RetryPolicy(attempts=1, budget=5.0)
        with Client(form.url, token=token, timeout=5, retry=once) as client:
            client.me()
    except Unauthenticated as err:
        why = (f"no_token: {form.url} refuses the token in ${form.token_env} ({err.detail}): "
               "every edit would be blocked. Set a valid token and run this again")  # fmt: skip
        if dry_run:
            return [why]
        raise InvalidRequest(why + "; nothing was changed", field="token_env") from None
    except (TenureError, OSError) as err:
        return [f"the token in ${form.token_env} could not be checked ({err}): run `tenure "
                "agent doctor claude-code` once the server runs"]  # fmt: skip
    return []


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
