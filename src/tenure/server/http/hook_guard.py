"""The hook route's guard: an edit's hook is never answered with an error status.

Claude Code treats an HTTP hook's non-2xx reply (and a connection it cannot make) as a
non-blocking error: the tool call goes ahead. So :class:`HookGuard` sits in front of the whole
app (authentication, the body limit, the rate limiter, the routes, the error handlers) for
``POST /v1/hooks/claude-code`` only:

- it reads the body itself, up to the hook route's own cap (``TENURE_HOOK_MAX_BODY_BYTES``,
  32 MiB: Claude Code posts the whole tool input, and a ``Write``'s content can be megabytes),
  and hands the route the event without what the decision never reads
  (:func:`tenure.core.hook_failures.slim`: the content is not kept);
- for an edit (``PreToolUse`` of Edit, Write, MultiEdit, NotebookEdit, or a body it cannot
  read) every failure, wherever it happens (no token, a refused one, rate limiting, a body over
  the cap or not JSON, the database gone, a crash), is answered ``200`` with the harness's deny
  naming what is wrong and how to fix it;
- any other event (a heartbeat, an end) gets the route's honest status.

A body that does not arrive in time is answered by the connection's protocol
(:mod:`tenure.server.timeouts`), with the same kind of deny on this route.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure.core import hook_failures as hf
from tenure.server.http.deps import dumps
from tenure.server.http.hotpath import replaying
from tenure.verbs.hooks import CLAUDE_CODE

HOOK_PATH = CLAUDE_CODE.path
DEFAULT_CAP = 32 * 1024 * 1024
log = logging.getLogger(__name__)


class _TooBig(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


class HookGuard:
    """``app`` behind the hook route's fail-closed reading and answering (module doc)."""

    def __init__(self, app: ASGIApp, cap: int = DEFAULT_CAP) -> None:
        self.app, self.cap = app, cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        try:
            body = await self._read(scope, receive)
        except _TooBig as big:
            await _answer(send, hf.too_large(big.size, self.cap))
            return
        try:
            event = json.loads(body)
        except ValueError as err:  # (UnicodeDecodeError too)
            await _answer(send, hf.not_json(str(err)))
            return
        if isinstance(event, dict):
            body = dumps(hf.slim(event))
        inner = _with_body(scope, body)
        replay = replaying(body, receive)
        if not hf.is_edit(event):
            await self.app(inner, replay, send)
            return
        await self._edit(inner, replay, send)

    async def _read(self, scope: Scope, receive: Receive) -> bytes:
        length = _header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) > self.cap:
            raise _TooBig(int(length))
        chunks, seen, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away: what came is all there is
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.cap:
                raise _TooBig(seen)
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        return b"".join(chunks)

    async def _edit(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the route for an edit; a reply that is not 2xx (or a crash) becomes a deny."""
        sent: list[Message] = []

        async def keep(message: Message) -> None:
            sent.append(message)

        try:
            await self.app(scope, receive, keep)
        except Exception:  # the error handlers answered (500) and re-raised: logged here
            log.exception("the hook route failed on an edit")
            if not _complete(sent):
                sent = [_start(500), _body(dumps(_INTERNAL))]
        status = next((m["status"] for m in sent if m["type"] == "http.response.start"), 500)
        if 200 <= status < 300:
            for message in sent:
                await send(message)
            return
        auth = _header(scope, b"authorization")
        problem = _problem(b"".join(m.get("body", b"") for m in sent if "body" in m))
        await _answer(send, hf.failed(problem, status, auth))


_INTERNAL = {"code": "internal", "detail": "the server failed; the error is in its log"}


def _complete(sent: list[Message]) -> bool:
    ends = [m for m in sent if m["type"] == "http.response.body" and not m.get("more_body")]
    return bool(ends) and any(m["type"] == "http.response.start" for m in sent)


def _problem(raw: bytes) -> dict[str, Any]:
    try:
        found = json.loads(raw)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _with_body(scope: Scope, body: bytes) -> Scope:
    """``scope`` with its ``Content-Length`` the length of the (slimmed) ``body``."""
    headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length",
               b"transfer-encoding")]  # fmt: skip
    return {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}


def _start(status: int) -> Message:
    return {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json")],
    }


def _body(content: bytes) -> Message:
    return {"type": "http.response.body", "body": content, "more_body": False}


async def _answer(send: Send, reply: dict[str, Any]) -> None:
    """``200`` with the harness's decision JSON."""
    content = dumps(reply)
    start = _start(200)
    start["headers"] = [*start["headers"], (b"content-length", str(len(content)).encode())]
    await send(start)
    await send(_body(content))
