"""What an HTTP hook is told when tenure could not answer its event: a failure of the request
(no token, a refused one, a body too big, the database gone, …) turned into the harness's own
deny, with what is wrong and how to fix it.

Claude Code treats an HTTP hook's non-2xx reply as a *non-blocking* error: the tool call goes
ahead. So for an edit (``PreToolUse`` of a tool that edits a file) the server never answers
the hook route with an error status; it answers ``200`` with a deny whose reason is
:func:`reason`. Pure: the server (:mod:`tenure.server.http.hook_guard`) calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tenure.core.hooks import EDIT_TOOLS, deny

#: the fields of ``tool_input`` the decision reads (the rest, a Write's content, is dropped)
TOOL_INPUT_KEPT = ("file_path", "notebook_path", "path")
#: fields of the event dropped whole before the event is acted on (never read, may be large)
DROPPED = ("tool_response",)

SETUP = (
    "set TENURE_TOKEN (a token from `tenure principal add NAME --kind agent`) in the "
    "environment Claude Code starts in, then run `tenure agent doctor claude-code`; or use "
    "the command hooks (`tenure agent setup claude-code`, after `tenure login`)"
)
TELL = "The edit is blocked until this is fixed: tell the user."


def is_edit(event: Any) -> bool:
    """Whether ``event`` (the parsed body) is, or may be, an edit: a ``PreToolUse`` of a tool
    that edits a file, or of no tool named. Anything that is not an object counts as one (it
    cannot be told apart, so it is refused rather than let through)."""
    if not isinstance(event, Mapping):
        return True
    if event.get("hook_event_name") != "PreToolUse":
        return False
    tool = event.get("tool_name")
    return not isinstance(tool, str) or tool in EDIT_TOOLS


def slim(event: Mapping[str, Any]) -> dict[str, Any]:
    """``event`` without what the decision never reads: ``tool_input`` keeps only the path
    fields (a Write's ``content``, an Edit's strings are dropped), ``tool_response`` goes."""
    out = {k: v for k, v in event.items() if k not in DROPPED}
    tool_input = event.get("tool_input")
    if isinstance(tool_input, Mapping):
        out["tool_input"] = {k: tool_input[k] for k in TOOL_INPUT_KEPT if k in tool_input}
    return out


def reason(problem: Mapping[str, Any], status: int, authorization: str | None) -> str:
    """The deny's reason for the failed request: the problem's ``code`` and ``detail``, what
    it means for the edit, and how to fix it."""
    code = str(problem.get("code") or _STATUS_CODES.get(status, "error"))
    detail = str(problem.get("detail") or problem.get("title") or f"HTTP {status}").rstrip(".")
    said = f"tenure could not check this edit ({code}: {detail})."
    return f"{said} {_fix(code, problem, authorization)} {TELL}"


def failed(problem: Mapping[str, Any], status: int, authorization: str | None) -> dict[str, Any]:
    """The harness's deny for a failed request (:func:`reason`)."""
    return deny(reason(problem, status, authorization))


def too_large(size: int, cap: int) -> dict[str, Any]:
    """The deny for a hook body over the hook route's own cap."""
    return deny(
        f"tenure could not check this edit (too_large: the hook's body is {size} bytes or "
        f"more, over the server's hook limit of {cap} bytes). Raise TENURE_HOOK_MAX_BODY_BYTES "
        f"on the server, or make the edit in smaller parts. {TELL}"
    )


def not_json(why: str) -> dict[str, Any]:
    """The deny for a body that is not a JSON event."""
    return deny(
        f"tenure could not check this edit (invalid_request: the hook's body is not a JSON "
        f"object: {why}). Only Claude Code's own HTTP hook should post here. {TELL}"
    )


def body_late(seconds: float) -> dict[str, Any]:
    """The deny for a hook body that did not arrive within the server's body timeout."""
    return deny(
        f"tenure could not check this edit (request_timeout: the hook's body did not arrive "
        f"within {seconds:g} s). Check the network between Claude Code and tenure, or raise "
        f"TENURE_BODY_TIMEOUT_MS on the server. {TELL}"
    )


_STATUS_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    408: "request_timeout",
    413: "too_large",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
}


def _fix(code: str, problem: Mapping[str, Any], authorization: str | None) -> str:
    if code == "unauthenticated":
        given = (authorization or "").strip()
        if given.lower() in ("", "bearer"):
            return f"No tenure token was sent: {SETUP}."
        return f"The token was refused (revoked, expired or not this server's): {SETUP}."
    if code == "rate_limited":
        wait = problem.get("retry_after_s") or 1
        return f"Too many failed authentications from this address: fix the token ({SETUP})"\
            f" and retry in {wait} s."  # fmt: skip
    if code == "forbidden":
        return "This principal may not take leases on files/ keys: give it a role that may."
    if code == "unavailable":
        return "tenure's database cannot be reached: the server must get it back."
    if code == "internal":
        return "The tenure server failed (the error is in its log)."
    if code == "too_large":
        return "The hook's body is over the server's limit (TENURE_HOOK_MAX_BODY_BYTES)."
    return "Check the hook's settings with `tenure agent doctor claude-code`."
