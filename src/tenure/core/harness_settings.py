"""What ``tenure agent setup`` writes into a coding agent's settings, as pure merges of JSON
documents: no file is read or written here (``tenure.cli.agent_setup`` does that).

Claude Code keeps its hooks in a settings file (``.claude/settings.json`` in a project,
``~/.claude/settings.json`` for the user) under ``hooks``: for each event a list of matcher
groups, ``{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "…"}]}``. Its MCP
servers live under ``mcpServers`` in ``.mcp.json`` (project) or ``~/.claude.json`` (user).

**Our entries are found by what they run**, never by a marker of ours (Claude Code validates its
settings, and an unknown key could make it refuse the file): a command hook whose command ends
in ``hook claude-code``, an HTTP hook whose URL ends in ``/v1/hooks/claude-code``, an MCP server
named ``tenure`` that runs ``tenure mcp`` or calls the server's ``/mcp``. Adding is idempotent
(a document already holding exactly our entries comes back equal), keeps every other key, hook
and group where it is, and removing takes out exactly those entries (and a group, an event or
``hooks`` itself only when ours was all they held).
"""

from __future__ import annotations

import copy
import json
import shlex
from dataclasses import dataclass
from typing import Any

from tenure.errors import InvalidRequest

EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"
HOOK_ROUTE = "/v1/hooks/claude-code"
HOOK_COMMAND = "hook claude-code"
HOOK_MODULE = "tenure.hooks.command"
MCP_NAME = "tenure"
#: after the hook's own command, in the shell Claude Code runs it in: its exit code 0 (go on)
#: and 2 (blocked) pass, any other (127 not found, 126 not executable, 1 a crash, a signal)
#: becomes 2 with a reason, since Claude Code lets an edit through on any other code
GUARD = "; s=$?; case $s in 0|2) exit $s;; esac; "
GUARD_SAYS = (
    "tenure: the hook could not run (exit %s: %s did not start, or failed), so tenure cannot "
    "check edits and blocks them. Fix: run tenure agent setup claude-code again where tenure "
    "is installed, or take the hooks out with tenure agent setup claude-code --remove.\\n"
)

Doc = dict[str, Any]


@dataclass(frozen=True)
class Form:
    """How the hooks reach tenure: a command (one process per event) or, with ``url``, Claude
    Code's HTTP hook posting to the server itself, with the bearer token from the environment
    variable ``token_env`` (and ``$TENURE_REPO``, when set, naming the repository; else the
    server derives it from the event's ``cwd``).

    The command runs the interpreter ``python`` on the hook module found under ``src`` (both
    absolute paths: nothing is looked up on the harness's ``PATH``), else ``exe hook
    claude-code``; either is followed by :data:`GUARD`, so that whatever keeps it from running
    blocks an edit (exit 2) instead of letting it through."""

    exe: str = "tenure"
    url: str | None = None
    token_env: str = "TENURE_TOKEN"
    python: str | None = None
    src: str | None = None

    def command(self) -> str:
        """The command hook's shell command (see :func:`hook_command`)."""
        return hook_command(self.exe, self.python, self.src)

    def hook(self) -> Doc:
        if self.url is None:
            return {"type": "command", "command": self.command()}
        return {
            "type": "http",
            "url": self.url.rstrip("/") + HOOK_ROUTE,
            "headers": {
                "Authorization": f"Bearer ${self.token_env}",
                "Tenure-Repo": "$TENURE_REPO",
            },
            "allowedEnvVars": [self.token_env, "TENURE_REPO"],
        }

    def groups(self) -> dict[str, Doc]:
        """Per event, the matcher group we add."""
        hook = self.hook()
        return {
            "PreToolUse": {"matcher": EDIT_TOOLS, "hooks": [hook]},
            "PostToolUse": {"matcher": "*", "hooks": [hook]},
            "SessionEnd": {"hooks": [hook]},
        }

    def mcp(self) -> Doc:
        """The MCP server entry: ``tenure mcp`` over stdio, or the server's ``/mcp``."""
        if self.url is None:
            return {"type": "stdio", "command": self.exe, "args": ["mcp"]}
        return {
            "type": "http",
            "url": self.url.rstrip("/") + "/mcp",
            "headers": {"Authorization": f"Bearer ${{{self.token_env}}}"},
        }


def hook_command(exe: str, python: str | None = None, src: str | None = None) -> str:
    """``python -I -S -c '…' claude-code`` (isolated, no site: the interpreter's quickest
    start, with ``src`` put first on the import path), else ``exe hook claude-code``; then
    :data:`GUARD` and the reason for any other exit code, on stderr."""
    if python is not None and src is not None:
        code = f"import sys;sys.path[:0]=[{json.dumps(src)}];from {HOOK_MODULE} import run;run()"
        launch, what = f"{shlex.quote(python)} -I -S -c {shlex.quote(code)} claude-code", python
    else:
        launch, what = f"{shlex.quote(exe)} {HOOK_COMMAND}", exe
    return f'{launch}{GUARD}printf {shlex.quote(GUARD_SAYS)} "$s" {shlex.quote(what)} >&2; exit 2'


def is_our_hook(hook: Any) -> bool:
    """A hook entry ``tenure agent setup`` wrote (in either form, guarded or not)."""
    if not isinstance(hook, dict):
        return False
    if hook.get("type") == "command":
        command = str(hook.get("command", "")).rstrip()
        guarded = f" claude-code{GUARD}" in command and "tenure" in command
        return command.endswith(HOOK_COMMAND) or guarded
    if hook.get("type") == "http":
        return str(hook.get("url", "")).rstrip("/").endswith(HOOK_ROUTE)
    return False


def is_our_mcp(server: Any) -> bool:
    """An MCP server entry ``tenure agent setup`` wrote (in either form)."""
    if not isinstance(server, dict):
        return False
    command = str(server.get("command", ""))
    if server.get("args") == ["mcp"] and command.rsplit("/", 1)[-1] == "tenure":
        return True
    headers = server.get("headers")
    auth = headers.get("Authorization", "") if isinstance(headers, dict) else ""
    url = str(server.get("url", "")).rstrip("/")
    return server.get("type") == "http" and url.endswith("/mcp") and auth.startswith("Bearer $")


# Reading and writing the text ---------------------------------------------------------------
def parse(text: str, where: str) -> Doc:
    """The settings document in ``text`` (empty: ``{}``); refused, naming ``where``, when it is
    not a JSON object or its ``hooks``/``mcpServers`` are not shaped as the harness reads them."""
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        at = f"line {err.lineno}, column {err.colno}: {err.msg}"
        raise _invalid(where, f"not valid JSON ({at})") from None
    if not isinstance(doc, dict):
        raise _invalid(where, f"a JSON {type(doc).__name__} where an object was expected")
    _check_hooks(doc.get("hooks"), where)
    if "mcpServers" in doc and not isinstance(doc["mcpServers"], dict):
        raise _invalid(where, "`mcpServers` is not an object")
    return doc


def _check_hooks(hooks: Any, where: str) -> None:
    if hooks is None:
        return
    if not isinstance(hooks, dict):
        raise _invalid(where, "`hooks` is not an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise _invalid(where, f"`hooks.{event}` is not a list")
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise _invalid(where, f"`hooks.{event}` holds a group that is not an object")


def _invalid(where: str, what: str) -> InvalidRequest:
    return InvalidRequest(
        f"invalid_settings: {where} is {what}. Fix the file (or move it away) and run the "
        "command again; nothing was changed",
        field="settings",
    )


def render(doc: Doc) -> str:
    """The document as the harness writes it: 2-space indent, non-ASCII kept, a final newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# Merging --------------------------------------------------------------------------------------
def add_hooks(doc: Doc, form: Form) -> Doc:
    """``doc`` with our hook groups (a new document; ``doc`` is left as it is). An event that
    already holds exactly our group is left alone; one holding ours in another form (a command
    where an HTTP hook is asked, another matcher) has it replaced, in the same place."""
    out = copy.deepcopy(doc)
    hooks = out.setdefault("hooks", {})
    for event, group in form.groups().items():
        groups: list[Any] = hooks.setdefault(event, [])
        if group in groups:
            continue
        at = next((i for i, g in enumerate(groups) if _holds_ours(g)), len(groups))
        kept = _without_ours(groups)
        hooks[event] = [*kept[:at], group, *kept[at:]]
    return out


def remove_hooks(doc: Doc) -> Doc:
    """``doc`` without our hooks: a group, an event, ``hooks`` itself dropped only when ours
    were all it held."""
    out = copy.deepcopy(doc)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not any(_holds_ours(g) for g in groups):
            continue
        hooks[event] = _without_ours(groups)
        if not hooks[event]:
            del hooks[event]
    if not hooks and hooks != doc.get("hooks"):
        del out["hooks"]
    return out


def _holds_ours(group: Any) -> bool:
    return isinstance(group, dict) and any(is_our_hook(h) for h in group.get("hooks", []))


def _without_ours(groups: list[Any]) -> list[Any]:
    """The groups with our hooks taken out; a group that held only ours is dropped."""
    kept: list[Any] = []
    for group in groups:
        if not _holds_ours(group):
            kept.append(group)
            continue
        rest = [h for h in group["hooks"] if not is_our_hook(h)]
        if rest:
            kept.append({**group, "hooks": rest})
    return kept


def add_mcp(doc: Doc, form: Form) -> tuple[Doc, bool]:
    """``doc`` with our MCP server, and whether a server of that name that is not ours was found
    (then it is left as it is: the user configured it)."""
    out = copy.deepcopy(doc)
    current = out.get("mcpServers", {}).get(MCP_NAME)
    if current is not None and not is_our_mcp(current):
        return out, True
    out.setdefault("mcpServers", {})[MCP_NAME] = form.mcp()
    return out, False


def remove_mcp(doc: Doc) -> Doc:
    """``doc`` without our MCP server (``mcpServers`` dropped only when ours was all it held)."""
    out = copy.deepcopy(doc)
    servers = out.get("mcpServers")
    if not isinstance(servers, dict) or not is_our_mcp(servers.get(MCP_NAME)):
        return out
    del servers[MCP_NAME]
    if not servers:
        del out["mcpServers"]
    return out
