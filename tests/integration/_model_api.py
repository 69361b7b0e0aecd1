"""A scripted stand-in for Anthropic's Messages API on 127.0.0.1, for driving the real Claude
Code binary with no model behind it.

The script is a set of *conversations*, each a fixed list of turns. A conversation is found by
a marker: a string its first user message contains (the prompt given to ``claude -p``, or the
prompt a ``Task`` call hands a subagent). The turn played is the number of assistant messages
already in the request, so the stand-in keeps no state between requests and parallel subagents
each get their own next turn. A turn is a tool call (:func:`tool`) or a final text
(:func:`text`); a conversation past its last turn, and any request that matches no marker (the
binary's own side requests: titles, summaries), get a short final text.

Every request is recorded (:attr:`ModelApi.requests`), so a test reads what the model was told:
:meth:`ModelApi.results` gives the ``tool_result`` blocks the binary sent back.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MODEL = "claude-sonnet-4-5-20250929"


@dataclass(frozen=True)
class Call:
    """One tool call: the tool's ``name`` and its ``input``."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One reply of the model: tool calls (made at once, as parallel calls are) or, with none,
    a final ``text``."""

    text: str = ""
    calls: tuple[Call, ...] = ()


def tool(name: str, **input: Any) -> Turn:
    """A turn calling the tool ``name`` with ``input`` (``Write``, ``Edit``, ``Bash``,
    ``Agent`` for a subagent, an MCP tool as ``mcp__<server>__<tool>``)."""
    return Turn(calls=(Call(name, input),))


def parallel(*turns: Turn) -> Turn:
    """One turn making the calls of ``turns`` at once (two subagents side by side)."""
    return Turn(calls=tuple(call for turn in turns for call in turn.calls))


def text(said: str) -> Turn:
    """A final turn: the model says ``said`` and stops."""
    return Turn(text=said)


@dataclass(frozen=True)
class ToolResult:
    """What the binary sent back for one tool call: the text the model reads, and whether the
    harness marked it an error (a blocked call is one)."""

    tool_use_id: str
    name: str
    content: str
    is_error: bool


class ModelApi:
    """The Starlette app of the stand-in; ``script`` maps a marker to its conversation's turns."""

    def __init__(self, script: dict[str, list[Turn]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.unknown: list[str] = []  # paths asked for that the stand-in does not serve
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
                Route("/{rest:path}", self._other, methods=["GET", "POST", "PUT", "HEAD"]),
            ]
        )

    # what the model was told ------------------------------------------------------------------
    def conversation(self, marker: str) -> list[dict[str, Any]]:
        """The requests of the conversation ``marker``, in the order they came."""
        return [r for r in self.requests if _marker_of(r, self.script) == marker]

    def results(self, marker: str | None = None) -> list[ToolResult]:
        """Every tool result sent back (in ``marker``'s conversation only, when given), each
        once, in order."""
        seen: dict[str, ToolResult] = {}
        names: dict[str, str] = {}
        for req in self.requests if marker is None else self.conversation(marker):
            for msg in req.get("messages", []):
                for block in _blocks(msg):
                    if block.get("type") == "tool_use":
                        names[block["id"]] = block["name"]
                    if block.get("type") == "tool_result" and block["tool_use_id"] not in seen:
                        seen[block["tool_use_id"]] = ToolResult(
                            block["tool_use_id"],
                            names.get(block["tool_use_id"], "?"),
                            _text_of(block.get("content")),
                            bool(block.get("is_error")),
                        )
        return list(seen.values())

    def told_after(self, tool_use_id: str) -> str:
        """The text of every message from the one carrying ``tool_use_id``'s result to the end
        of the last request that carries it (the result, hook feedback, reminders)."""
        for req in reversed(self.requests):
            messages = req.get("messages", [])
            at = next(
                (i for i, m in enumerate(messages) if _has_result(m, tool_use_id)),
                None,
            )
            if at is not None:
                return "\n".join(_text_of(m.get("content")) for m in messages[at:])
        return ""

    def result_of(self, name: str, marker: str | None = None) -> list[ToolResult]:
        """The results of the calls of the tool ``name``."""
        return [r for r in self.results(marker) if r.name == name]

    def tools(self, marker: str) -> list[str]:
        """The names of the tools the binary offered in ``marker``'s conversation."""
        reqs = self.conversation(marker)
        return [t["name"] for t in reqs[0].get("tools", [])] if reqs else []

    # the routes -------------------------------------------------------------------------------
    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
        turn = self._turn(body)
        msg_id = f"msg_{next(self._ids):04d}"
        tool_ids = [f"toolu_{next(self._ids):04d}" for _ in turn.calls]
        if not body.get("stream"):
            return JSONResponse(_message(msg_id, turn, tool_ids, body))
        return StreamingResponse(
            _events(msg_id, turn, tool_ids, body), media_type="text/event-stream"
        )

    async def _count(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": 10})

    async def _other(self, request: Request) -> Response:
        self.unknown.append(f"{request.method} {request.url.path}")
        return JSONResponse({"error": "not served by the stand-in"}, status_code=404)

    def _turn(self, body: dict[str, Any]) -> Turn:
        marker = _marker_of(body, self.script)
        if marker is None or not body.get("tools"):
            return text("ok")
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        turns = self.script[marker]
        return turns[done] if done < len(turns) else text("done")


def _marker_of(body: dict[str, Any], script: dict[str, list[Turn]]) -> str | None:
    """The marker found in the request's first user message (the longest, when several)."""
    messages = body.get("messages") or []
    first = next((m for m in messages if m.get("role") == "user"), None)
    if first is None:
        return None
    said = _text_of(first.get("content"))
    found = [m for m in script if m in said]
    return max(found, key=len) if found else None


def _has_result(msg: dict[str, Any], tool_use_id: str) -> bool:
    return any(
        b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id for b in _blocks(msg)
    )


def _blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    return content if isinstance(content, list) else []


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(b.get("text", b.get("content")) if isinstance(b, dict) else b) for b in content
        )
    return ""


def _usage() -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _content(turn: Turn, tool_ids: list[str]) -> list[dict[str, Any]]:
    if not turn.calls:
        return [{"type": "text", "text": turn.text}]
    return [
        {"type": "tool_use", "id": tid, "name": call.name, "input": call.input}
        for call, tid in zip(turn.calls, tool_ids, strict=True)
    ]


def _message(msg_id: str, turn: Turn, tool_ids: list[str], body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model", MODEL),
        "content": _content(turn, tool_ids),
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": _usage(),
    }


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _stream(msg_id: str, turn: Turn, tool_ids: list[str], body: dict[str, Any]) -> Iterator[bytes]:
    """The events of one streamed reply, as the Messages API sends them: ``message_start``,
    per block ``content_block_start``/``_delta``/``_stop`` (a tool's input as one
    ``input_json_delta``), ``message_delta`` with the stop reason, ``message_stop``."""
    start = {**_message(msg_id, turn, tool_ids, body), "content": [], "stop_reason": None}
    yield _sse("message_start", {"message": start})
    for index, block in enumerate(_content(turn, tool_ids)):
        first: dict[str, Any]
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _sse("content_block_start", {"index": index, "content_block": first})
        yield _sse("content_block_delta", {"index": index, "delta": delta})
        yield _sse("content_block_stop", {"index": index})
    stop = "tool_use" if turn.calls else "end_turn"
    yield _sse(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
    )
    yield _sse("message_stop", {})


async def _events(
    msg_id: str, turn: Turn, tool_ids: list[str], body: dict[str, Any]
) -> AsyncIterator[bytes]:
    for chunk in _stream(msg_id, turn, tool_ids, body):
        yield chunk
