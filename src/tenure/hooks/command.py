"""``tenure hook claude-code``: the command hook. Reads one hook event on stdin, asks the server
(``POST /v1/hooks/claude-code``) and answers the harness: the decision JSON on stdout, and for
a blocked edit the reason on stderr with exit code 2 (Claude Code's blocking code).

It runs before every file edit, so it starts fast: the standard library and
:mod:`tenure.core.hooks` only (no click, httpx or pydantic; ``tenure.entry`` sends ``tenure
hook …`` here before the CLI loads). Its one HTTP request is written on a socket: importing
``http.client`` alone (for its e-mail header parser) took a third of the start-up.

- The server: ``TENURE_URL`` and ``TENURE_TOKEN``, else the login ``tenure login`` saved.
- The repository of an edit: ``TENURE_REPO`` names it, else git does (from the event's
  ``cwd``); its root is found by git, else ``CLAUDE_PROJECT_DIR`` (else ``cwd``) stands for it.
  Both are sent as ``repo`` and ``root``, so the server needs no access to this machine's files.
  (An end needs neither: git is not asked.)
- After ``Bash`` or any other tool that is not an edit tool, the files the working tree changed
  since the session's previous tool call go with the heartbeat (:mod:`tenure.hooks.detect`):
  the server reports those another session holds to the model (``unleased_edit``).
- Fail closed for edits: when tenure cannot be asked (unreachable, a refusal such as ``401``,
  a reply that is not a decision) an edit is blocked with a reason saying so and how to fix it.
  Fail open for heartbeats and session ends (exit 0).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any, BinaryIO
from urllib.parse import quote, urlsplit

from tenure.core import hooks as h
from tenure.hooks import detect
from tenure.service.gitrepo import locate
from tenure.settings import DEFAULT_HOST, DEFAULT_PORT, LOGIN_FILE, same_server

HARNESSES = ("claude-code",)
PATH = "/v1/hooks/claude-code"
TIMEOUT_S = 10.0
BLOCK = 2  # Claude Code: a blocking error, stderr fed to the model
USAGE = f"usage: tenure hook {{{','.join(HARNESSES)}}}  (reads one hook event on stdin)"


def main(argv: list[str], stdin: BinaryIO | None = None) -> int:
    """Run ``tenure hook ARGV``; returns the exit code."""
    if argv in (["-h"], ["--help"]) or argv[:1] not in ([h] for h in HARNESSES):
        print(__doc__ if argv[:1] in (["-h"], ["--help"]) else USAGE, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 64
    raw = (stdin or sys.stdin.buffer).read()
    try:
        event = json.loads(raw)
    except ValueError as err:  # UnicodeDecodeError included
        return _block(f"invalid_request: the hook event on stdin is not JSON ({err}).")
    if not isinstance(event, dict):
        return _block("invalid_request: the hook event on stdin must be a JSON object.")
    return answer(event, raw, dict(os.environ))


def answer(event: dict[str, Any], body: bytes, env: dict[str, str]) -> int:
    """Ask the server about ``event`` (sent as ``body``) and answer the harness."""
    edit = h.kind_of(event) == "edit"
    url, token = server(env)
    query = where(event, env) if edit else {}
    if detect.wanted(event):  # after Bash or any tool not known to edit: what it changed
        query, body = _with_changes(event, body, env)
    elif h.kind_of(event) == "end":
        detect.forget(event, env)
    try:
        status, reply = post(url, token, body, query)
    except (OSError, ValueError) as err:
        return _unreachable(edit, url, f"{type(err).__name__}: {err}")
    if status != 200 or not isinstance(reply, dict):
        return _unreachable(edit, url, _refusal(status, reply))
    reason = h.denied_reason(reply)
    print(json.dumps(reply))
    if reason is not None:
        print(reason, file=sys.stderr)
        return BLOCK
    return 0


def server(env: dict[str, str]) -> tuple[str, str | None]:
    """The server's URL and the bearer token, as the CLI finds them."""
    login = _login(env)
    default = (
        f"http://{env.get('TENURE_HOST') or DEFAULT_HOST}:{env.get('TENURE_PORT') or DEFAULT_PORT}"
    )
    url = env.get("TENURE_URL") or login.get("url") or default
    saved = login.get("token") if same_server(login.get("url"), url) else None
    return url, env.get("TENURE_TOKEN") or saved or None


def _login(env: dict[str, str]) -> dict[str, str]:
    home = env.get("HOME") or os.path.expanduser("~")
    base = env.get("TENURE_CONFIG_DIR") or os.path.join(
        env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "tenure"
    )
    try:
        with open(os.path.join(base, LOGIN_FILE)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, str)}


def where(event: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """``repo`` and ``root`` of the event's repository, found on this machine."""
    cwd = event.get("cwd")
    cwd = cwd if isinstance(cwd, str) else ""
    fallback = env.get("CLAUDE_PROJECT_DIR") or cwd
    repo = locate(cwd, env.get("TENURE_REPO") or None, fallback)
    return {} if repo is None else {"repo": repo.name, "root": repo.root}


def _with_changes(
    event: dict[str, Any], body: bytes, env: dict[str, str]
) -> tuple[dict[str, str], bytes]:
    """The repository and the working tree's changes since the session's previous tool call,
    for the server to report those another session holds (nothing when git cannot tell)."""
    place = where(event, env)
    changes = detect.look(event, place["root"], env) if place else None
    return (place, detect.attach(body, event, changes)) if changes else ({}, body)


def post(url: str, token: str | None, body: bytes, query: dict[str, str]) -> tuple[int, Any]:
    """POST ``body`` to the hook route; ``(status, the reply's JSON or None)``. One request on
    its own connection (``Connection: close``): the reply is what the server sends until it
    closes."""
    parts = urlsplit(url)
    https = parts.scheme == "https"
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if https else 80)
    params = "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items())
    target = parts.path.rstrip("/") + PATH + (f"?{params}" if params else "")
    head = [
        f"POST {target} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *([f"Authorization: Bearer {token}"] if token else []),
    ]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as raw:
        sock = _tls(raw, host) if https else raw
        sock.sendall(request)
        data = _read_all(sock)
    return _parse(data)


def _tls(raw: socket.socket, host: str) -> socket.socket:
    import ssl  # only for an https server

    return ssl.create_default_context().wrap_socket(raw, server_hostname=host)


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(data: bytes) -> tuple[int, Any]:
    head, _, payload = data.partition(b"\r\n\r\n")
    status_line, *headers = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise ConnectionError(f"not an HTTP reply: {status_line[:80]!r}")
    if any(h.lower().replace(" ", "") == "transfer-encoding:chunked" for h in headers):
        payload = _unchunk(payload)
    try:
        return int(fields[1]), json.loads(payload) if payload else None
    except ValueError:
        return int(fields[1]), None


def _unchunk(payload: bytes) -> bytes:
    out, rest = [], payload
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def _refusal(status: int, reply: Any) -> str:
    if isinstance(reply, dict) and reply.get("code"):
        return f"{status} {reply.get('code')}: {reply.get('detail') or reply.get('title')}"
    return f"HTTP {status}"


def _unreachable(edit: bool, url: str, why: str) -> int:
    said = (
        f"tenure_unreachable: tenure at {url} could not check this edit ({why}), so it is "
        "blocked. Tell the user: start the server (tenure serve), or set TENURE_URL and "
        "TENURE_TOKEN (or run tenure login) for this session; "
        "`tenure agent setup claude-code --remove` takes the hooks out."
    )
    if not edit:
        print(f"tenure: {url} not reached ({why}); nothing renewed or released.", file=sys.stderr)
        print("{}")
        return 0
    return _block(said)


def _block(reason: str) -> int:
    print(json.dumps(h.deny(reason)))
    print(reason, file=sys.stderr)
    return BLOCK
