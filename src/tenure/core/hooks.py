"""A coding harness's hook events, read once: what each one asks of tenure and what to answer.

Pure (no I/O, standard library only, so the command hook can load it in a few milliseconds):
the service (:mod:`tenure.service.hooks`) acts on a :class:`HookEvent`, the command hook
(:mod:`tenure.hooks.command`) decides with it whether a failure blocks.

Claude Code's events (its hooks reference, code.claude.com/docs/en/hooks): every event has
``hook_event_name``, ``session_id``, ``cwd`` (and more that tenure ignores); ``PreToolUse`` and
``PostToolUse`` add ``tool_name`` and ``tool_input``; newer releases add ``prompt_id``.

- ``PreToolUse`` of a tool that edits a file (:data:`EDIT_TOOLS`) is an **edit**: tenure takes
  or renews the lease on the file's key for the session, and a refusal blocks the tool call.
  A malformed edit is blocked too (fail closed): tenure cannot tell which file it would change.
- ``PostToolUse`` (and ``PostToolUseFailure``) is a **heartbeat**: the session's leases are
  renewed. ``SessionEnd`` is an **end**: they are released. A malformed heartbeat or end
  changes nothing and blocks nothing (fail open): the leases lapse by their TTL.
- Any other event, or ``PreToolUse`` of any other tool: nothing to do.

A file's key is ``files/<repo>/<path from the repository root>``; ``<repo>`` is the normalised
``origin`` URL (:func:`repo_from_remote`), else the repository root without its leading ``/``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from tenure.core.repos import repo_from_remote as repo_from_remote
from tenure.core.repos import repo_from_root as repo_from_root

FILES = "files/"
#: the tools that edit a file, and the field of ``tool_input`` that names it
EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
HEARTBEATS = frozenset({"PostToolUse", "PostToolUseFailure"})
ENDS = frozenset({"SessionEnd"})
MAX_SESSION_BYTES = 128
MCP_SESSIONS = "mcp-http:"  # tenure.core.validate.RESERVED_SESSION_PREFIX: the /mcp connections'

Kind = Literal["edit", "heartbeat", "end", "other"]


@dataclass(frozen=True)
class HookEvent:
    """What one event asks: ``kind``; for an edit the file's ``path`` (absolute, or relative to
    ``cwd``); ``task`` is the prompt id when the harness sent one, else the session id."""

    kind: Kind
    name: str
    session: str = ""
    cwd: str = ""
    path: str = ""
    task: str = ""


@dataclass(frozen=True)
class Malformed:
    """An event tenure cannot act on: ``field`` at fault, ``message`` in the house form."""

    kind: Kind
    field: str
    message: str


def kind_of(event: Mapping[str, Any]) -> Kind:
    """The kind of ``event`` from its name and tool alone (an edit whatever its other fields)."""
    name = event.get("hook_event_name")
    if name == "PreToolUse":
        tool = event.get("tool_name")
        return "edit" if not isinstance(tool, str) or tool in EDIT_TOOLS else "other"
    if name in HEARTBEATS:
        return "heartbeat"
    return "end" if name in ENDS else "other"


def read_event(event: Mapping[str, Any]) -> HookEvent | Malformed:
    """``event`` checked: the fields tenure reads must have their types (the others are left
    alone, whatever they hold). A ``PreToolUse`` whose ``tool_name`` is missing counts as an
    edit, so that it is refused rather than let through."""
    name = event.get("hook_event_name")
    if not isinstance(name, str) or not name:
        return _bad("other", "hook_event_name", "must be the event's name, e.g. PreToolUse")
    kind = kind_of(event)
    if kind == "other":
        return HookEvent("other", name)
    if kind == "edit" and not isinstance(event.get("tool_name"), str):
        return _bad(kind, "tool_name", "must name the tool, e.g. Edit")
    session = event.get("session_id")
    if not isinstance(session, str) or not session.strip():
        return _bad(kind, "session_id", "must be the harness's session id (a non-empty string)")
    if len(session.encode()) > MAX_SESSION_BYTES or _control(session):
        return _bad(kind, "session_id", "must be at most 128 bytes without control characters")
    if session.startswith(MCP_SESSIONS):
        return _bad(kind, "session_id", f"must not start with {MCP_SESSIONS!r} (/mcp's sessions)")
    cwd = event.get("cwd", "")
    if not isinstance(cwd, str):
        return _bad(kind, "cwd", "must be the session's working directory (a string)")
    prompt = event.get("prompt_id")
    if prompt is not None and not isinstance(prompt, str):
        return _bad(kind, "prompt_id", "must be a string when present")
    task = prompt if prompt and prompt.strip() else session
    if kind != "edit":
        return HookEvent(kind, name, session, cwd, task=task)
    return _edit(event, name, session, cwd, task)


def _edit(
    event: Mapping[str, Any], name: str, session: str, cwd: str, task: str
) -> HookEvent | Malformed:
    tool = str(event["tool_name"])
    field = EDIT_TOOLS[tool]
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, Mapping):
        return _bad("edit", "tool_input", f"must be the {tool} tool's input (an object)")
    path = tool_input.get(field)
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return _bad("edit", f"tool_input.{field}", f"must be the path of the file {tool} edits")
    if not posixpath.isabs(cwd):
        return _bad("edit", "cwd", "must be the session's working directory (an absolute path)")
    return HookEvent("edit", name, session, cwd, path, task)


def _bad(kind: Kind, field: str, says: str) -> Malformed:
    return Malformed(kind, field, f"invalid_request: {field} {says}.")


def _control(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


# keys ----------------------------------------------------------------------------------------
def relative_path(root: str, path: str, cwd: str = "") -> str | None:
    """``path`` (absolute, or relative to ``cwd``) from ``root``, in ``/`` form; ``None`` when
    it lies outside ``root`` (or is ``root`` itself)."""
    full = path if posixpath.isabs(path) else posixpath.join(cwd, path)
    full, root = posixpath.normpath(full), posixpath.normpath(root)
    rel = posixpath.relpath(full, root) if posixpath.isabs(root) else ".."
    if rel == "." or rel == ".." or rel.startswith("../"):
        return None
    return rel


def file_key(repo: str, rel: str) -> str:
    """``files/<repo>/<rel>``."""
    return f"{FILES}{repo.strip('/')}/{rel}"


# replies -------------------------------------------------------------------------------------
def allow() -> dict[str, Any]:
    """No decision: the harness goes on as it would without tenure (its own permission rules
    apply; tenure never answers ``allow``, which would skip them)."""
    return {}


def deny(reason: str) -> dict[str, Any]:
    """Block the tool call; the harness shows ``reason`` to the model."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def warn(message: str) -> dict[str, Any]:
    """Nothing blocked; ``message`` shown to the user (a heartbeat or end tenure could not act
    on)."""
    return {"systemMessage": message}


def denied_reason(reply: Mapping[str, Any]) -> str | None:
    """The reason of a :func:`deny` reply, ``None`` for any other reply."""
    out = reply.get("hookSpecificOutput")
    if isinstance(out, Mapping) and out.get("permissionDecision") == "deny":
        return str(out.get("permissionDecisionReason") or "blocked by tenure")
    return None


@dataclass(frozen=True)
class Holder:
    """The lease that blocks an edit: its key and holder (from a ``lease_held`` refusal)."""

    key: str
    holder: str | None
    session: str | None
    task: str | None
    expires_at: int | None


def held_reason(rel: str, asked: str, by: Holder, now_ms: int) -> str:
    """Why an edit of ``rel`` (key ``asked``) is blocked, in words the model can act on: who
    holds it, which session, for what task, until when; and what to do."""
    what = "a lease on" if by.key == asked else "a lease on the whole folder"
    whom = by.holder or "someone"
    details = [f"session {by.session}"] if by.session else []
    details += [f'task "{by.task}"'] if by.task else []
    who = f"{whom} ({', '.join(details)})" if details else whom
    until = f" until {_utc(by.expires_at)} ({_in(by.expires_at, now_ms)})" if by.expires_at else ""
    return (
        f"lease_held: {rel} is being edited elsewhere: {who} holds {what} {by.key}{until}. "
        "Work on something else or wait until it is released (a lease lapses when its session "
        "stops); do not edit this file meanwhile."
    )


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _in(ms: int, now_ms: int) -> str:
    left = max(0, ms - now_ms)
    minutes = round(left / 60_000)
    return f"in {minutes} min" if minutes >= 1 else f"in {max(1, round(left / 1000))} s"
