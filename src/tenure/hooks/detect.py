"""The command hook's look at the working tree after a tool that is not known to edit (``Bash``
and any other): the files changed since this session's previous tool call, sent with the
heartbeat so that the server can report those another session holds
(:mod:`tenure.core.unleased`). Standard library only.

``git status --porcelain -z`` (untracked files one by one) in the repository of the event's
``cwd``; each file's modification time; the instant of the session's previous look is kept in
a small file of the state directory (``TENURE_STATE_DIR``, else ``$XDG_STATE_HOME/tenure``,
else ``~/.local/state/tenure``), ``hooks/<hash of the session>``. Anything that fails here (no
git, not a repository, an unwritable state directory) sends nothing: detection is a report,
never a reason to block.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import time
from typing import Any

from tenure.core import hooks as h
from tenure.core import unleased as u

GIT_TIMEOUT_S = 5.0
#: the first look of a session reports the changes of this long before it
FIRST_LOOK_MS = 10 * 60_000
#: the event's field that carries the changes to the server
FIELD = "tenure_changed"
#: Claude Code's tools that only read (no look after them: they are most tool calls)
READ_ONLY = frozenset(  # tenure.hooks.command.READ_ONLY_TOOLS: the same
    {"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "BashOutput"}
)


def wanted(event: dict[str, Any]) -> bool:
    """After a tool that is neither one of the edit tools (leased before they run) nor one
    that only reads."""
    tool = event.get("tool_name")
    return (
        event.get("hook_event_name") in h.HEARTBEATS
        and isinstance(tool, str)
        and tool not in h.EDIT_TOOLS
        and tool not in READ_ONLY
        and isinstance(event.get("session_id"), str)
    )


def forget(event: dict[str, Any], env: dict[str, str]) -> None:
    """At the session's end: its state file goes."""
    session = event.get("session_id")
    if isinstance(session, str) and session:
        with contextlib.suppress(OSError):
            os.unlink(_state_file(env, session))


def look(event: dict[str, Any], root: str, env: dict[str, str]) -> list[dict[str, Any]] | None:
    """The changes of the working tree at ``root`` since the session's previous look, in the
    wire form; ``None`` when git cannot tell."""
    now = int(time.time() * 1000)
    state = _state_file(env, str(event["session_id"]))
    start = _previous(state, now)
    paths = _status(root)
    if paths is None:
        return None
    _remember(state, now)
    changes = [u.Change(p, _mtime(os.path.join(root, p))) for p in paths]
    return [c.to_wire() for c in u.since(changes, start)]


def attach(body: bytes, event: dict[str, Any], changes: list[dict[str, Any]]) -> bytes:
    """``body`` with the changes in it (the event is sent as the harness gave it otherwise)."""
    if not changes:
        return body
    return json.dumps({**event, FIELD: changes}).encode()


def _status(root: str) -> list[str] | None:
    try:
        done = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "-z", "--untracked-files=all"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return u.changed(done.stdout) if done.returncode == 0 else None


def _mtime(path: str) -> int:
    try:
        return int(os.lstat(path).st_mtime * 1000)
    except OSError:
        return 0  # deleted: when is unknown


def _state_file(env: dict[str, str], session: str) -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    base = env.get("TENURE_STATE_DIR") or os.path.join(
        env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state"), "tenure"
    )
    name = hashlib.sha256(session.encode()).hexdigest()[:32]
    return os.path.join(base, "hooks", name)


def _previous(state: str, now: int) -> int:
    try:
        with open(state) as f:
            return int(json.load(f)["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return now - FIRST_LOOK_MS


def _remember(state: str, now: int) -> None:
    try:
        os.makedirs(os.path.dirname(state), exist_ok=True)
        with open(state, "w") as f:
            json.dump({"at": now}, f)
    except OSError:
        pass
