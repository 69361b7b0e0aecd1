"""The harness hooks: ``POST /v1/hooks/claude-code`` answers a Claude Code hook event with the
harness's own decision JSON (:mod:`tenure.service.hooks` acts on it).

The input is the event as the harness sends it: every field is accepted (the harness sends
more than tenure reads) and the fields tenure reads are checked by the service, not here, so
that a malformed *edit* can be refused with the harness's deny (a ``422`` would let it through:
Claude Code treats a non-2xx reply of an HTTP hook as a non-blocking error).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from tenure.core.models import Principal
from tenure.verbs.table import Family, Reply, Services, never

EVENT_FIELDS = (
    "hook_event_name", "session_id", "agent_id", "cwd", "tool_name", "tool_input", "prompt_id",
    "prompt",
)  # fmt: skip


def _read(description: str) -> Any:
    return Field(default=None, description=description)


class ClaudeCodeEventIn(BaseModel):
    """A Claude Code hook event; other fields are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    hook_event_name: Annotated[
        str,
        Field(
            min_length=1,
            description="`PreToolUse` of Edit, Write, MultiEdit or NotebookEdit: take or renew "
            "the file's lease; `PostToolUse`: renew the session's leases; `SessionEnd`: release "
            "them; any other event: nothing",
        ),
    ]
    session_id: Annotated[Any, _read("the harness's session: the leases' session (string)")]
    cwd: Annotated[Any, _read("the session's working directory (absolute path)")]
    tool_name: Annotated[Any, _read("the tool about to run (PreToolUse)")]
    tool_input: Annotated[
        Any, _read("the tool's input; `file_path` (`notebook_path` for NotebookEdit)")
    ]
    prompt_id: Annotated[Any, _read("the prompt: the lease's task when present (string)")]
    tenure_changed: Annotated[
        Any,
        _read(
            "after a tool that is not an edit tool: the files of the working tree it changed, "
            '`[{"path": "src/app.py", "at": ms}]` (path from the repository root, when it '
            "changed; at most 200): those another session holds are reported (`unleased_edit`). "
            "The command hook sends it; an HTTP hook cannot (the server does not read files)"
        ),
    ]
    tenure_repo: Annotated[
        str | None,
        Field(
            description="the repository's name in file keys; the `repo` query parameter or "
            "the `Tenure-Repo` header (default: from `cwd`)"
        ),
    ] = None
    tenure_root: Annotated[
        str | None,
        Field(
            description="the repository's top directory; the `root` query parameter or the "
            "`Tenure-Root` header (default: found from `cwd` by git on the server)"
        ),
    ] = None


class HookSpecificOut(BaseModel):
    hookEventName: str
    permissionDecision: str | None = None
    permissionDecisionReason: str | None = None
    additionalContext: str | None = None


class HookReply(BaseModel):
    """Claude Code's hook output: empty (go on), a deny, a message for the user, or after a
    tool that changed files another session holds, ``decision: "block"`` with the ``reason``
    the model is told."""

    hookSpecificOutput: HookSpecificOut | None = None
    systemMessage: str | None = None
    decision: str | None = None
    reason: str | None = None


def _claude_code(services: Services, me: Principal, a: ClaudeCodeEventIn) -> dict[str, Any]:
    """Answer a Claude Code hook event (the body, as the harness sends it) with the harness's
    decision.

    An edit (`PreToolUse` of Edit, Write, MultiEdit, NotebookEdit) takes or renews the lease on
    `files/<repo>/<path from the repository root>` for the event's `session_id`; held by another
    session (or under its subtree lease) the reply denies the tool call, naming holder, session,
    task and expiry. `PostToolUse` renews the session's leases, `SessionEnd` releases them (a
    subagent's event, with `agent_id`, acts in the session `<session_id>/agent:<agent_id>`, which
    its parent's heartbeat and end cover); a failed edit (`PostToolUseFailure`) releases the
    file's lease it took; `UserPromptSubmit` names the session's task (the prompt's first line).
    The reply is `200` for every event tenure understood: `{}` (go on), a deny
    (`hookSpecificOutput.permissionDecision: "deny"`), or a `systemMessage`. A malformed edit is
    denied (fail closed); a malformed heartbeat or end is a `systemMessage` (fail open); a body
    without a string `hook_event_name` is `422`. Any failure of an edit's request (no or refused
    token, rate limiting, a body over `TENURE_HOOK_MAX_BODY_BYTES` or not JSON, the database
    gone, a crash) is a `200` deny naming it. `repo` (query) or `Tenure-Repo` (header) names the
    repository; `root` or `Tenure-Root` its top directory; without them the server finds both
    from `cwd` with git (same machine only)."""
    from tenure.service import hooks as service_hooks  # the client reads the table without it

    event = a.model_dump(exclude_unset=True, exclude={"tenure_repo", "tenure_root"})
    return service_hooks.claude_code(services.leases, me, event, a.tenure_repo, a.tenure_root)


def _same(out: dict[str, Any]) -> dict[str, Any]:
    return out


HOOKS = Family(tags=("hooks",), problems=(400, 401, 413, 422))
CLAUDE_CODE = HOOKS.verb(
    "hook_claude_code", "POST /v1/hooks/claude-code", ClaudeCodeEventIn, _claude_code,
    Reply(_same, _same, HookReply), repeatable=never,
)  # fmt: skip
