"""The agent session shown in docs/mcp.md is the one agents really get: this test runs it through
the SDK's MCP client (in process, on SQLite, on a fixed clock) and compares what it sees with
the block between the ``transcript`` markers of docs/mcp.md. ``TENURE_REGEN_DOCS=1`` rewrites
the block instead.

Replies are abbreviated (bookkeeping fields and empty values dropped); instants are the fixed
clock's, and the only words that depend on the real time ("in 28s", "2d ago") read ``<rel>``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _mcp import in_process, text_of
from mcp import Client

import tenure

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("backend", ["sqlite"], indirect=True)]
DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
START, END = "<!-- transcript:start -->", "<!-- transcript:end -->"
T0 = 1_767_603_600_000  # 2026-01-05T09:00:00Z: not today, so instants read in full
NOISE = {
    "acquired_at", "renewed_at", "renewals", "created_at", "created_by", "updated_at", "meta",
    "progress_at", "at",
}  # fmt: skip
RELATIVE = re.compile(r"\b(in \d+[a-z0-9]*|\d+[a-z0-9]* ago)\b")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, str | list | dict) and not value)


def abbreviated(value: Any) -> Any:
    """``value`` without bookkeeping fields and empty values."""
    if isinstance(value, dict):
        kept = {k: abbreviated(v) for k, v in value.items() if k not in NOISE}
        return {k: v for k, v in kept.items() if not empty(v)}
    if isinstance(value, list):
        return [abbreviated(v) for v in value]
    return value


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines += ["", f"# {text}"]

    async def call(self, who: str, client: Client, tool: str, **args: Any) -> dict[str, Any]:
        result = await client.call_tool(tool, args)
        self.lines.append(f"{who} → {tool} {json.dumps(args)}")
        if result.is_error:
            self.lines.append(f"  ✗ {RELATIVE.sub('<rel>', text_of(result))}")
            return {}
        reply = result.structured_content
        assert isinstance(reply, dict)
        self.lines.append(f"  ← {RELATIVE.sub('<rel>', json.dumps(abbreviated(reply)))}")
        return reply

    def text(self) -> str:
        return "\n".join(["```text", *self.lines[1:], "```"])


async def session(service: tenure.Service, clock: tenure.FakeClock) -> str:
    """A supervisor fills the queue, agent1 claims and dies, agent2 finds the work through
    ``ready`` and takes it over, the supervisor sees it lapsed, agent1 comes back too late."""
    agent = in_process(service)
    t = Transcript()
    async with agent("boss", kind="human", roles=("supervisor",)) as boss:
        t.note("a supervisor fills the queue")
        await t.call("boss", boss, "create_item", id="fix-login", title="Fix the login page",
                     body="Users get a 500 after the password step.", priority=1,
                     labels=["auth"])  # fmt: skip
        await t.call("boss", boss, "create_item", id="notes", title="Write the release notes")
    async with agent("agent1") as agent1:
        t.note("agent1 starts, claims the urgent item and reports progress")
        await t.call("agent1", agent1, "briefing")
        claim = await t.call("agent1", agent1, "claim", item_id="fix-login", ttl_ms=60000)
        await t.call("agent1", agent1, "progress", item_id="fix-login", epoch=claim["epoch"],
                     message="found the bug in the session check", percent=50)  # fmt: skip
        clock.advance(61_000)
        t.note("agent1 stops calling tools; a minute later its claim has lapsed")
        async with agent("agent2") as agent2:
            await t.call("agent2", agent2, "ready")
            async with agent("boss") as boss:
                t.note("the supervisor's briefing lists the lapsed claim")
                await t.call("boss", boss, "briefing")
            t.note("agent2 takes the work over, with a reason, and finishes it")
            await t.call("agent2", agent2, "claim", item_id="fix-login")
            taken = await t.call("agent2", agent2, "claim", item_id="fix-login", takeover=True,
                                 reason="agent1 stopped: its claim lapsed")  # fmt: skip
            await t.call("agent2", agent2, "complete", item_id="fix-login", epoch=taken["epoch"],
                         result="fixed the session check")  # fmt: skip
        t.note("agent1 comes back with its old epoch: its result is not recorded")
        await t.call("agent1", agent1, "complete", item_id="fix-login", epoch=claim["epoch"])
    async with agent("boss") as boss:
        t.note("the supervisor looks after the queue")
        await t.call("boss", boss, "list_items", status="done")
        await t.call("boss", boss, "update_item", item_id="notes", priority=0, labels=["release"])
        await t.call("boss", boss, "cancel_item", item_id="notes", reason="the release slipped")
        await t.call("boss", boss, "list_items", label="release")
    return t.text()


def block(doc: str) -> str:
    start, end = doc.index(START) + len(START), doc.index(END)
    return doc[start:end].strip("\n")


async def test_the_transcript_in_the_docs_is_what_agents_see(
    make_service: Callable[..., tenure.Service], clock: tenure.FakeClock
) -> None:
    clock.set(T0)
    seen = await session(make_service(), clock)
    doc = DOC.read_text()
    if os.environ.get("TENURE_REGEN_DOCS") == "1":
        start, end = doc.index(START) + len(START), doc.index(END)
        DOC.write_text(f"{doc[:start]}\n{seen}\n{doc[end:]}")
        doc = DOC.read_text()
    assert block(doc) == seen, "docs/mcp.md's transcript is stale: run with TENURE_REGEN_DOCS=1"
