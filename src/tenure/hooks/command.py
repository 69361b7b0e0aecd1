"""``tenure hook claude-code``: the command hook. Reads one hook event on stdin, asks the server
(``POST /v1/hooks/claude-code``) and answers the harness: the decision JSON on stdout, and for
a blocked edit the reason on stderr with exit code 2 (Claude Code's blocking code).

It runs before every file edit, so it starts fast: a handful of lean modules (``os`` and C
modules of the standard library, :mod:`tenure.core.hookwire`, :mod:`tenure.core.servers`,
:mod:`tenure.core.repos` and this package); no click, httpx, pydantic, ``json``, ``re``,
``socket``, ``subprocess``, ``dataclasses`` or ``typing``. ``tests/unit/test_hook_imports.py``
holds it to that list; ``docs/performance.md`` has the figures.

- The server: ``TENURE_URL`` (one URL, or a failover list ``http://a,http://b`` tried in
  order, the first that answers deciding) and ``TENURE_TOKEN``, else the login ``tenure login``
  saved.
- The repository of an edit: ``TENURE_REPO`` names it, else git does (from the event's
  ``cwd``); its root is found by git, else ``CLAUDE_PROJECT_DIR`` (else ``cwd``) stands for it.
  Both are sent as ``repo`` and ``root``, so the server needs no access to this machine's files.
  (A heartbeat or an end needs neither: git is not asked.)
- Fail closed for edits: whatever goes wrong (the server unreachable or refusing, a reply that
  is not a decision, a ``TENURE_URL`` that is no URL, a login file that cannot be read, a bug
  here) an edit is blocked (exit 2) with a reason saying what and how to fix it. Fail open for
  heartbeats and session ends (exit 0, the reason on stderr). An edit waits at most
  ``TENURE_HOOK_TIMEOUT_MS`` (10 s) for each server and 45 s in all (Claude Code kills a hook
  after 60 s and then lets the edit through), a heartbeat or an end 1.5 s.
- After ``Bash`` or any other tool that is not an edit tool (nor one that only reads), the files
  the working tree changed since the session's previous tool call go with the heartbeat
  (:mod:`tenure.hooks.detect`): the server reports those another session holds to the model
  (``unleased_edit``).
"""

from __future__ import annotations

import os
import sys
import time

from tenure.core import hookwire
from tenure.core.servers import same_server, server_urls, url_parts
from tenure.hooks import http, jsonlite
from tenure.hooks.git import locate, resolve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

HARNESSES = ("claude-code",)
SCOPES = ("repo", "branch")  # TENURE_HOOK_SCOPE
PATH = "/v1/hooks/claude-code"
EDIT_TIMEOUT_MS = 10_000  # TENURE_HOOK_TIMEOUT_MS
MAX_TIMEOUT_MS = 45_000  # and all the servers' tries together: under Claude Code's 60 s
OTHER_TIMEOUT_S = 1.5  # a heartbeat or an end: nobody needs its answer
BLOCK = 2  # Claude Code: a blocking error, stderr fed to the model
USAGE = f"usage: tenure hook {{{','.join(HARNESSES)}}}  (reads one hook event on stdin)"
# as tenure.settings has them (not imported: it loads pathlib, dataclasses and the policy)
DEFAULT_HOST, DEFAULT_PORT, LOGIN_FILE = "127.0.0.1", 7676, "login.json"
SETUP = "tenure agent setup claude-code"
#: as tenure.hooks.detect has them: no look at the working tree after these (most tool calls)
READ_ONLY_TOOLS = frozenset(
    {"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "BashOutput"}
)


class Misconfigured(Exception):
    """The hook cannot ask tenure as configured (the message says what to fix)."""


def run() -> None:
    """The process: ``python -c '…run()' claude-code`` (what ``tenure agent setup`` writes)."""
    sys.exit(main(sys.argv[1:]))


def main(argv: list[str], stdin: BinaryIO | None = None) -> int:
    """Run ``tenure hook ARGV``; returns the exit code. Nothing escapes: an edit (or an event
    not read yet) is blocked by any failure, anything else is let through."""
    if argv in (["-h"], ["--help"]) or argv[:1] not in ([h] for h in HARNESSES):
        print(__doc__ if argv[:1] in (["-h"], ["--help"]) else USAGE, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 64
    edit = True  # until the event says otherwise
    try:
        raw = (stdin or sys.stdin.buffer).read()
        try:
            event = jsonlite.loads(raw)
        except ValueError as err:  # UnicodeDecodeError included
            return _block(f"invalid_request: the hook event on stdin is not JSON ({err}).")
        if not isinstance(event, dict):
            return _block("invalid_request: the hook event on stdin must be a JSON object.")
        edit = hookwire.is_edit(event)
        return answer(event, raw, dict(os.environ), edit)
    except Misconfigured as err:
        return _failed(edit, str(err))
    except BaseException as err:  # fail closed: nothing may escape as exit 1
        return _failed(edit, _crash(err))


def answer(event: dict[str, Any], body: bytes, env: dict[str, str], edit: bool) -> int:
    """Ask the servers about ``event`` (sent as ``body``, its file's path resolved through
    symlinks when it names one) and answer the harness."""
    urls, token = server(env)
    timeout = timeout_s(env) if edit else OTHER_TIMEOUT_S
    names_file = edit or _failed_edit(event)
    query = where(event, env, scope(env) if edit else "repo") if names_file else {}
    body = _resolved(event, body) if names_file else body
    if not edit:
        query, body = _looked(event, body, env, query)
    failures = []
    deadline = time.monotonic() + (MAX_TIMEOUT_MS / 1000 if edit else timeout)
    for url in urls:
        named = f"{url}: " if len(urls) > 1 else ""
        left = min(timeout, deadline - time.monotonic())
        if left <= 0:
            failures.append(f"{named}not tried (no time left)")
            continue
        try:
            status, reply, text = http.post(url, PATH, token, body, query, left)
        except (OSError, ValueError) as err:
            failures.append(f"{named}{type(err).__name__}: {err}")
            continue
        if status >= 500 and url != urls[-1]:
            failures.append(f"{named}{_refusal(status, reply)}")
            continue
        if status != 200 or not isinstance(reply, dict):
            return _unreachable(edit, url, _refusal(status, reply))
        return _decided(reply, text)
    return _unreachable(edit, ", ".join(urls), "; ".join(failures))


def _looked(
    event: dict[str, Any], body: bytes, env: dict[str, str], query: dict[str, str]
) -> tuple[dict[str, str], bytes]:
    """After ``Bash`` or any tool not known to edit or only read: the files the working tree
    changed since the session's previous tool call go with the heartbeat, for the server to
    report those another session holds; at the session's end its state file goes.
    (:mod:`tenure.hooks.detect` is loaded only then: most tool calls only read.)"""
    name, tool = event.get("hook_event_name"), event.get("tool_name")
    if name == "SessionEnd":
        from tenure.hooks import detect

        detect.forget(event, env)
        return query, body
    if tool in hookwire.EDIT_TOOL_NAMES or tool in READ_ONLY_TOOLS:
        return query, body
    from tenure.hooks import detect

    if not detect.wanted(event):
        return query, body
    place = query or where(event, env)
    changes = detect.look(event, place["root"], env) if place else None
    return (place, detect.attach(body, event, changes)) if changes else (query, body)


def _decided(reply: dict[str, Any], text: bytes) -> int:
    print(text.decode("utf-8").strip())
    reason = hookwire.denied_reason(reply)
    if reason is not None:
        print(reason, file=sys.stderr)
        return BLOCK
    return 0


def server(env: dict[str, str]) -> tuple[list[str], str | None]:
    """The servers' URLs (in the order to try them) and the bearer token, as the CLI finds
    them; :class:`Misconfigured` when they cannot be known."""
    named, token = env.get("TENURE_URL"), env.get("TENURE_TOKEN")
    login = {} if named and token else _login(env)
    default = (
        f"http://{env.get('TENURE_HOST') or DEFAULT_HOST}:{env.get('TENURE_PORT') or DEFAULT_PORT}"
    )
    url = named or login.get("url") or default
    where = "TENURE_URL" if named else "the saved login's url" if login.get("url") else "the URL"
    try:
        urls = server_urls(url)
        for one in urls:
            url_parts(one)
    except ValueError as err:
        raise Misconfigured(
            f"{where} {url!r} is not a server URL ({err}). Fix: set TENURE_URL to "
            "http://HOST:PORT, or a failover list http://a:7676,http://b:7676"
        ) from None
    saved = login.get("token") if same_server(login.get("url"), url) else None
    return urls, token or saved or None


def _login(env: dict[str, str]) -> dict[str, str]:
    """The saved login (``{}`` when there is none); :class:`Misconfigured` when the file is
    there but cannot be read."""
    home = env.get("HOME") or os.path.expanduser("~")
    base = env.get("TENURE_CONFIG_DIR") or os.path.join(
        env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "tenure"
    )
    path = os.path.join(base, LOGIN_FILE)
    try:
        with open(path, "rb") as f:
            doc = jsonlite.loads(f.read())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise Misconfigured(
            f"the login file {path} cannot be read ({type(err).__name__}: {err}). Fix: run "
            "tenure login again, or set TENURE_URL and TENURE_TOKEN for this session"
        ) from None
    if not isinstance(doc, dict):
        raise Misconfigured(f"the login file {path} is not a JSON object. Fix: tenure login")
    return {k: v for k, v in doc.items() if isinstance(v, str)}


def timeout_s(env: dict[str, str]) -> float:
    """How long an edit waits for each server: ``TENURE_HOOK_TIMEOUT_MS``, else 10 s."""
    raw = env.get("TENURE_HOOK_TIMEOUT_MS", "").strip()
    if not raw:
        return EDIT_TIMEOUT_MS / 1000
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) <= MAX_TIMEOUT_MS:
        raise Misconfigured(
            f"TENURE_HOOK_TIMEOUT_MS={raw!r} is not a number of milliseconds from 1 to "
            f"{MAX_TIMEOUT_MS}. "
            "Fix: set it to e.g. 10000, or unset it"
        )
    return int(raw) / 1000


def where(event: dict[str, Any], env: dict[str, str], scope: str = "repo") -> dict[str, str]:
    """``repo`` and ``root`` of the event's repository, found on this machine (the root
    through symlinks; with ``scope`` ``branch`` the name ends in ``@<branch>``)."""
    cwd = event.get("cwd")
    cwd = cwd if isinstance(cwd, str) else ""
    fallback = env.get("CLAUDE_PROJECT_DIR") or cwd
    repo = locate(cwd, env.get("TENURE_REPO") or None, fallback, branch=scope == "branch")
    return {} if repo is None else {"repo": repo[0], "root": repo[1]}


def scope(env: dict[str, str]) -> str:
    """``TENURE_HOOK_SCOPE``: ``repo`` (the default: one key per file in every branch) or
    ``branch`` (the branch in the key); :class:`Misconfigured` for anything else."""
    given = env.get("TENURE_HOOK_SCOPE") or "repo"
    if given not in SCOPES:
        raise Misconfigured(
            f"invalid_request: TENURE_HOOK_SCOPE must be repo or branch, not {given!r}"
        )
    return given


def _failed_edit(event: dict[str, Any]) -> bool:
    """A failed edit (``PostToolUseFailure`` of an edit tool): the server releases the file's
    lease if that edit took it, so it needs the file's key as an edit does."""
    failed = event.get("hook_event_name") == "PostToolUseFailure"
    return failed and event.get("tool_name") in hookwire.EDIT_TOOL_NAMES


def _resolved(event: dict[str, Any], body: bytes) -> bytes:
    """``body`` with the file's path (and ``cwd``) resolved through symlinks on this machine,
    the one that has the files; ``body`` itself when the event names no file."""
    tool_input, cwd, tool = event.get("tool_input"), event.get("cwd"), event.get("tool_name")
    field = "notebook_path" if tool == "NotebookEdit" else "file_path"
    if not isinstance(tool_input, dict) or not isinstance(cwd, str) or not cwd.startswith("/"):
        return body
    path = tool_input.get(field)
    if not isinstance(path, str) or not path.strip() or "\x00" in path or "\x00" in cwd:
        return body
    real = {**tool_input, field: resolve(path, cwd)}
    return jsonlite.dumps({**event, "cwd": resolve(cwd), "tool_input": real}).encode()


def _refusal(status: int, reply: Any) -> str:
    if isinstance(reply, dict) and reply.get("code"):
        return f"{status} {reply.get('code')}: {reply.get('detail') or reply.get('title')}"
    return f"HTTP {status}"


def _crash(err: BaseException) -> str:
    where = ""
    tb = err.__traceback__
    while tb is not None:
        where = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return (
        f"tenure's hook failed ({type(err).__name__}: {err}{where}). Fix: report it, run "
        f"`{SETUP}` again, or take the hooks out with `{SETUP} --remove`"
    )


def _unreachable(edit: bool, url: str, why: str) -> int:
    return _pass_or_block(
        edit,
        f"{url} not reached ({why})",
        f"tenure_unreachable: tenure at {url} could not check this edit ({why}), so it is "
        "blocked. Tell the user: start the server (tenure serve), or set TENURE_URL and "
        "TENURE_TOKEN (or run tenure login) for this session; "
        f"`{SETUP} --remove` takes the hooks out.",
    )


def _failed(edit: bool, why: str) -> int:
    return _pass_or_block(
        edit,
        why,
        f"tenure_hook_failed: tenure cannot check this edit, so it is blocked: {why}. Tell "
        "the user.",
    )


def _pass_or_block(edit: bool, note: str, reason: str) -> int:
    """When tenure could not do its part: an edit is blocked with ``reason``; any other event
    goes on (``note`` on stderr, nothing renewed or released)."""
    if not edit:
        print(f"tenure: {note}; nothing renewed or released.", file=sys.stderr)
        print("{}")
        return 0
    return _block(reason)


def _block(reason: str) -> int:
    print(jsonlite.dumps(hookwire.deny(reason)))
    print(reason, file=sys.stderr)
    return BLOCK
