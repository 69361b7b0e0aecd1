"""The command hook's half of :mod:`tenure.core.hooks`: which events are edits (a failure to
ask tenure blocks them) and the harness's ``deny`` decision. Pure and lean (no ``re``,
``dataclasses``, ``typing`` at run time): the command hook loads it before every edit.
``tests/unit/test_hookwire.py`` holds it to :mod:`tenure.core.hooks`, which says the same for the
server.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: the tools that edit a file (the keys of :data:`tenure.core.hooks.EDIT_TOOLS`)
EDIT_TOOL_NAMES = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


def is_edit(event: Mapping[str, Any]) -> bool:
    """``PreToolUse`` of a tool that edits a file, or of no tool named (refused, not let
    through): :func:`tenure.core.hooks.kind_of` is ``"edit"``."""
    if event.get("hook_event_name") != "PreToolUse":
        return False
    tool = event.get("tool_name")
    return not isinstance(tool, str) or tool in EDIT_TOOL_NAMES


def deny(reason: str) -> dict[str, Any]:
    """Block the tool call; the harness shows ``reason`` to the model."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def denied_reason(reply: Mapping[str, Any]) -> str | None:
    """The reason of a :func:`deny` reply, ``None`` for any other reply."""
    out = reply.get("hookSpecificOutput")
    if isinstance(out, dict) and out.get("permissionDecision") == "deny":
        return str(out.get("permissionDecisionReason") or "blocked by tenure")
    return None
