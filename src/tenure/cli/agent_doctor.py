"""``tenure agent doctor``: does the installed setup really block an edit of a held file?

It reads Claude Code's hook settings (the project's and the user's), and for each edit hook of
tenure's it finds runs one real round trip through exactly what the harness will run: the
written command (through ``sh -c``, the event on stdin, as Claude Code runs it) or a POST to
the written URL with the written headers (``$VAR`` filled only from ``allowedEnvVars``, as
Claude Code fills them). A probe session takes a probe file's lease, a second probe session's
edit of it must be blocked, then both sessions end. Green, or red with why and how to fix it
(exit 1).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import httpx

from tenure.cli.agent_setup import agent, check_harness, claude_files, read
from tenure.cli.context import cli_of, verb
from tenure.core import harness_settings as hs
from tenure.core.hooks import denied_reason

PROBE_FILE = ".tenure-doctor-probe"
TIMEOUT_S = 30.0
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
Send = Callable[[dict[str, Any]], "Outcome"]
SETUP = "run `tenure agent setup claude-code` (with --http for the HTTP form)"


@dataclass
class Outcome:
    """What the harness would make of one hook run: blocked (and why), or let through; or a
    failure the harness treats as a non-blocking error (``broken``: the edit goes ahead)."""

    blocked: bool = False
    reason: str = ""
    broken: str | None = None


@dataclass
class Check:
    settings: str
    form: str
    runs: str
    ok: bool = False
    says: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "form": self.form, "runs": self.runs, "ok": self.ok,
                "says": self.says, "notes": self.notes}  # fmt: skip


@verb(
    agent,
    "doctor",
    summary="Check that the installed hooks really block an edit of a held file.",
    example="tenure agent doctor claude-code\ntenure agent doctor claude-code --user --json",
)
@click.argument("harness", metavar="HARNESS", default="claude-code")
@click.option("--project", "scope", flag_value="project",
              help="Only this project's settings.")  # fmt: skip
@click.option("--user", "scope", flag_value="user", help="Only your user settings.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              help="The project (default: the git repository around the current directory, "
              "else the current directory).")  # fmt: skip
def agent_doctor(harness: str, scope: str | None, directory: Path | None) -> None:
    """Read HARNESS's hook settings (the project's and the user's) and, for each tenure edit
    hook in them, run one real blocked-edit round trip through exactly what the harness runs:
    a probe session takes a lease on a probe file, a second probe session's edit of it must be
    blocked, then both sessions end. Prints green, or red with why and how to fix it, and
    exits 1 when any check is red (or no tenure hook is installed)."""
    check_harness(harness)
    root = directory if directory is not None else _root()
    scopes = [scope] if scope else ["project", "user"]
    checks = [c for s in scopes for c in checks_of(claude_files(s, root)[0], root)]
    if not checks:
        where = " or ".join(str(claude_files(s, root)[0]) for s in scopes)
        checks = [Check(where, "none", "", says=f"no tenure hook in {where}: {SETUP}")]
    ok = all(c.ok for c in checks)
    doc = {"harness": harness, "ok": ok, "checks": [c.to_dict() for c in checks]}
    cli_of().out.emit(doc, lambda: report(checks))
    if not ok:
        raise SystemExit(1)


def _root() -> Path:
    from tenure.cli.agent_setup import project_root

    return project_root(Path.cwd())


def checks_of(path: Path, root: Path) -> list[Check]:
    """One check per distinct tenure edit hook in the settings file at ``path``."""
    text = read(path)
    if text is None:
        return []
    doc = hs.parse(text, str(path))
    hooks = doc.get("hooks") or {}
    edit_hooks = [h for g in hooks.get("PreToolUse", []) for h in g.get("hooks", [])
                  if hs.is_our_hook(h)]  # fmt: skip
    found: list[Check] = []
    for hook in [h for i, h in enumerate(edit_hooks) if h not in edit_hooks[:i]]:
        check = run_check(str(path), hook, root)
        check.notes += registration_notes(hooks)
        found.append(check)
    return found


def registration_notes(hooks: dict[str, Any]) -> list[str]:
    """What the settings miss besides the edit hook (heartbeats, the end): not red, but said."""
    notes = []
    for event in ("PostToolUse", "PostToolUseFailure", "SessionEnd"):
        if not any(hs.is_our_hook(h) for g in hooks.get(event, []) for h in g.get("hooks", [])):
            notes.append(f"no tenure {event} hook: {SETUP} again to register it")
    return notes


def run_check(settings: str, hook: dict[str, Any], root: Path) -> Check:
    form = str(hook.get("type"))
    runs = str(hook.get("command") if form == "command" else hook.get("url"))
    check = Check(settings, form, runs)

    def send(event: dict[str, Any]) -> Outcome:
        return run_command(runs, event, root) if form == "command" else post_http(hook, event)

    tag = uuid.uuid4().hex[:12]
    holder, prober = f"tenure-doctor-holder-{tag}", f"tenure-doctor-probe-{tag}"
    try:
        check.ok, check.says = round_trip(send, root, holder, prober)
    finally:
        for session in (holder, prober):
            send(end_event(session, root))
    return check


def round_trip(send: Send, root: Path, holder: str, prober: str) -> tuple[bool, str]:
    first = send(edit_event(holder, root))
    if first.broken:
        return False, first.broken
    if first.blocked:
        return False, f"the probe edit was blocked, so every edit would be: {first.reason}"
    second = send(edit_event(prober, root))
    if second.broken:
        return False, second.broken
    if not second.blocked:
        return False, ("a second session's edit of a file the first one holds was let "
                       f"through: the hook does not coordinate edits. {SETUP} again")  # fmt: skip
    return True, f"a second session's edit of a held file was blocked: {second.reason}"


def edit_event(session: str, root: Path) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(root / PROBE_FILE), "content": ""},
        "prompt_id": "tenure agent doctor",
    }


def end_event(session: str, root: Path) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(root), "hook_event_name": "SessionEnd",
            "reason": "other"}  # fmt: skip


def run_command(command: str, event: dict[str, Any], root: Path) -> Outcome:
    """The command as Claude Code runs it: ``sh -c``, the event on stdin, the project's
    directory as ``CLAUDE_PROJECT_DIR``; exit 2 (or a JSON deny) blocks."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root)}
    try:
        done = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(event), env=env,
                              cwd=root, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return Outcome(broken=f"`{command}` did not answer within {TIMEOUT_S:g} s: {LETS}")
    if done.returncode == 2:
        return Outcome(True, done.stderr.strip())
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [""])[-1]
        what = "not found" if done.returncode == 127 else f"exit {done.returncode}"
        fix = ("give setup --exe the absolute path of tenure" if done.returncode == 127
               else "see the error above")  # fmt: skip
        return Outcome(broken=f"`{command}` failed ({what}: {said}): {LETS}; {fix}")
    return decision(done.stdout)


LETS = "Claude Code treats that as a non-blocking error and lets the edit through"


def decision(text: str) -> Outcome:
    if not text.strip():
        return Outcome()
    try:
        reply = json.loads(text)
    except ValueError:
        return Outcome(broken=f"the hook's reply is not JSON ({text[:80]!r}): {LETS}")
    reason = denied_reason(reply) if isinstance(reply, dict) else None
    return Outcome(reason is not None, reason or "")


def post_http(hook: dict[str, Any], event: dict[str, Any]) -> Outcome:
    """A POST as Claude Code's HTTP hook sends it; only a 2xx JSON deny blocks."""
    url = str(hook.get("url"))
    headers = fill_headers(hook)
    try:
        with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as http:
            resp = http.post(url, json=event, headers=headers)
    except httpx.HTTPError as err:
        return Outcome(broken=f"{url} cannot be reached ({err}): {LETS}; start the server")
    if not 200 <= resp.status_code < 300:
        return Outcome(broken=f"{url} answered {resp.status_code} ({resp.text[:200]}): {LETS}")
    return decision(resp.text)


def fill_headers(hook: dict[str, Any]) -> dict[str, str]:
    """The hook's headers with ``$VAR``/``${VAR}`` filled from this environment, for the
    variables ``allowedEnvVars`` lists only (the others are empty, as in Claude Code)."""
    allowed = set(hook.get("allowedEnvVars") or [])

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return os.environ.get(name, "") if name in allowed else ""

    given = hook.get("headers") or {}
    return {str(k): ENV_REF.sub(fill, str(v)).strip() for k, v in given.items()}


def report(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        what = f" ({check.form}: {check.runs})" if check.runs else ""
        lines.append(f"{check.settings}{what}")
        lines.append(f"  {'green' if check.ok else 'red'}: {check.says}")
        lines += [f"  note: {note}" for note in check.notes]
    return "\n".join(lines)
