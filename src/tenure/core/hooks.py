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
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from tenure.core.hookwire import denied_reason as denied_reason
from tenure.core.hookwire import deny as deny  # the reply forms live with the lean hook's
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
FAILURES = frozenset({"PostToolUseFailure"})
ENDS = frozenset({"SessionEnd"})
PROMPTS = frozenset({"UserPromptSubmit"})
MAX_SESSION_BYTES = 128
MCP_SESSIONS = "mcp-http:"  # tenure.core.validate.RESERVED_SESSION_PREFIX: the /mcp connections'
#: what separates a subagent's session from its parent's: ``<parent>/agent:<agent_id>``
CHILD = "/agent:"
#: the longest task a prompt sets (its first line, cut to this many characters)
MAX_TASK_CHARS = 100
#: ``TENURE_HOOK_SCOPE``: files are keyed per repository (``repo``, the default: two branches
#: or worktrees of one repository exclude each other) or per branch (``files/<repo>@<branch>/…``)
HOOK_SCOPES = ("repo", "branch")
#: the environment variable in which each harness hands its session id to the MCP servers it
#: starts (stdio), so that ``tenure mcp`` acts in the session its hooks act in
HARNESS_SESSION_ENV = (("claude-code", "CLAUDE_CODE_SESSION_ID"),)

Kind = Literal["edit", "heartbeat", "end", "prompt", "other"]


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
    #: the harness's own session (the parent's, for a subagent's event)
    parent: str = ""
    #: a ``UserPromptSubmit``'s task (:func:`task_of_prompt`); for a ``PostToolUseFailure`` of
    #: an edit tool, the path of the file whose edit failed is ``path``
    prompt: str = ""
    failed: bool = False


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
    if name in PROMPTS:
        return "prompt"
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
    parent = event.get("session_id")
    if not isinstance(parent, str) or not parent.strip():
        return _bad(kind, "session_id", "must be the harness's session id (a non-empty string)")
    if len(parent.encode()) > MAX_SESSION_BYTES or _control(parent):
        return _bad(kind, "session_id", "must be at most 128 bytes without control characters")
    if parent.startswith(MCP_SESSIONS):
        return _bad(kind, "session_id", f"must not start with {MCP_SESSIONS!r} (/mcp's sessions)")
    agent = event.get("agent_id")
    if agent is not None and (not isinstance(agent, str) or _control(agent)):
        return _bad(kind, "agent_id", "must be the subagent's id (a string) when present")
    session = child_session(parent, agent) if agent else parent
    if session is None:
        return _bad(kind, "session_id", "must be at most 100 bytes in a subagent's event")
    cwd = event.get("cwd", "")
    if not isinstance(cwd, str):
        return _bad(kind, "cwd", "must be the session's working directory (a string)")
    prompt = event.get("prompt_id")
    if prompt is not None and not isinstance(prompt, str):
        return _bad(kind, "prompt_id", "must be a string when present")
    task = prompt if prompt and prompt.strip() else parent
    base = HookEvent(kind, name, session, cwd, task=task, parent=parent)
    if kind == "prompt":
        text = event.get("prompt")
        return replace(base, prompt=task_of_prompt(text) if isinstance(text, str) else "")
    if kind == "heartbeat" and name in FAILURES and event.get("tool_name") in EDIT_TOOLS:
        failed = _edit(event, base)
        return (
            replace(failed, kind="heartbeat", failed=True)
            if isinstance(failed, HookEvent)
            else base
        )
    if kind != "edit":
        return base
    return _edit(event, base)


def _edit(event: Mapping[str, Any], base: HookEvent) -> HookEvent | Malformed:
    tool = str(event["tool_name"])
    field = EDIT_TOOLS[tool]
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, Mapping):
        return _bad("edit", "tool_input", f"must be the {tool} tool's input (an object)")
    path = tool_input.get(field)
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return _bad("edit", f"tool_input.{field}", f"must be the path of the file {tool} edits")
    if not posixpath.isabs(base.cwd):
        return _bad("edit", "cwd", "must be the session's working directory (an absolute path)")
    return replace(base, path=path)


# sessions ------------------------------------------------------------------------------------
def child_session(parent: str, agent: str) -> str | None:
    """The session of subagent ``agent`` of the harness session ``parent``:
    ``<parent>/agent:<agent>``, the agent's id hashed (16 hex digits) when the whole would pass
    128 bytes; ``None`` when ``parent`` is too long even for that (over 105 bytes)."""
    whole = f"{parent}{CHILD}{agent}"
    if len(whole.encode()) <= MAX_SESSION_BYTES:
        return whole
    import hashlib  # only here: the command hook starts without it

    short = f"{parent}{CHILD}{hashlib.sha256(agent.encode()).hexdigest()[:16]}"
    return short if len(short.encode()) <= MAX_SESSION_BYTES else None


def is_family(session: str, parent: str) -> bool:
    """``session`` is ``parent`` itself or one of its subagents' sessions."""
    return session == parent or session.startswith(parent + CHILD)


def harness_session(env: Mapping[str, str]) -> str | None:
    """The session id a harness handed to the process of ``env`` (:data:`HARNESS_SESSION_ENV`):
    the session its hooks act in, so the MCP tools act in it too; ``None`` if none did (or the
    value could not be a session)."""
    for _, name in HARNESS_SESSION_ENV:
        value = env.get(name, "").strip()
        fits = len(value.encode()) <= MAX_SESSION_BYTES and not _control(value)
        if value and fits and not value.startswith(MCP_SESSIONS):
            return value
    return None


def task_of_prompt(prompt: str) -> str:
    """The task a person's prompt names: its first non-blank line, control characters taken
    out, spaces squeezed, cut to :data:`MAX_TASK_CHARS` (with ``…``). Nothing past the first
    line is kept (a pasted secret further down stays out of every lease)."""
    for line in prompt.splitlines():
        clean = " ".join("".join(c if not _control(c) else " " for c in line).split())
        if clean:
            if len(clean) > MAX_TASK_CHARS:
                return clean[: MAX_TASK_CHARS - 1].rstrip() + "…"
            return clean
    return ""


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


def warn(message: str) -> dict[str, Any]:
    """Nothing blocked; ``message`` shown to the user (a heartbeat or end tenure could not act
    on)."""
    return {"systemMessage": message}


def outside(path: str) -> dict[str, Any]:
    """No decision, and a word for the model: ``path`` resolves outside the repository, so
    tenure took no lease on it (nothing keeps other sessions off it)."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": (
                f"tenure: {path} is outside the repository (symlinks resolved): no lease was "
                "taken, so other sessions are not kept off it."
            ),
        }
    }


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
