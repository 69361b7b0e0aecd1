"""The harness sessions tenure acts in (:mod:`tenure.core.hooks`): a subagent's session under its
parent's, the MCP server's session from the harness's environment, the task a prompt names, the
failed edit and the file outside the repository."""

from __future__ import annotations

from typing import Any

import pytest

from tenure.core import hooks as h

ROOT = "/home/dev/shop"
PARENT = "8c35adc1-5f0e-4c1b-9a57-0d2f1e9b7a11"


def pre(**more: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse", "session_id": PARENT, "cwd": ROOT, "tool_name": "Edit",
        "tool_input": {"file_path": f"{ROOT}/src/a.py"}, **more,
    }  # fmt: skip


def test_a_subagents_event_acts_in_a_session_under_its_parents() -> None:
    read = h.read_event(pre(agent_id="a1b2c3", agent_type="general-purpose"))
    assert isinstance(read, h.HookEvent)
    assert read.session == f"{PARENT}/agent:a1b2c3" and read.parent == PARENT
    assert h.is_family(read.session, PARENT) and not h.is_family(PARENT + "x", PARENT)
    other = h.read_event(pre(agent_id="d4e5f6"))
    assert isinstance(other, h.HookEvent) and other.session != read.session


def test_a_subagents_session_stays_within_128_bytes() -> None:
    long_agent = h.child_session(PARENT, "z" * 200)
    assert long_agent is not None and len(long_agent.encode()) <= 128
    assert long_agent.startswith(PARENT + h.CHILD)
    assert long_agent != h.child_session(PARENT, "y" * 200)
    assert h.child_session("p" * 110, "a") == "p" * 110 + "/agent:a"
    assert h.child_session("p" * 110, "a" * 20) is None
    read = h.read_event(pre(session_id="p" * 110, agent_id="a" * 20))
    assert isinstance(read, h.Malformed) and read.field == "session_id"
    bad = h.read_event(pre(agent_id=7))
    assert isinstance(bad, h.Malformed) and bad.field == "agent_id"


def test_the_mcp_server_takes_the_harness_session_from_its_environment() -> None:
    assert h.harness_session({"CLAUDE_CODE_SESSION_ID": PARENT}) == PARENT
    assert h.harness_session({}) is None
    assert h.harness_session({"CLAUDE_CODE_SESSION_ID": "  "}) is None
    assert h.harness_session({"CLAUDE_CODE_SESSION_ID": "a\nb"}) is None
    assert h.harness_session({"CLAUDE_CODE_SESSION_ID": "x" * 129}) is None
    assert h.harness_session({"CLAUDE_CODE_SESSION_ID": "mcp-http:abc"}) is None


@pytest.mark.parametrize(
    "prompt, task",
    [
        ("Refactor billing retries\nAPI_KEY=sk-secret", "Refactor billing retries"),
        ("\n\n   Fix   the\tlogin \x1b[31mpage  \n", "Fix the login [31mpage"),
        ("x" * 300, "x" * 99 + "…"),
        ("   \n  ", ""),
    ],
)
def test_a_prompt_names_the_task_by_its_first_line(prompt: str, task: str) -> None:
    assert h.task_of_prompt(prompt) == task
    read = h.read_event({"hook_event_name": "UserPromptSubmit", "session_id": PARENT,
                         "cwd": ROOT, "prompt": prompt})  # fmt: skip
    assert isinstance(read, h.HookEvent) and read.kind == "prompt" and read.prompt == task


def test_a_failed_edit_names_its_file_and_still_renews() -> None:
    failed = {**pre(), "hook_event_name": "PostToolUseFailure", "error": "String not found"}
    read = h.read_event(failed)
    assert isinstance(read, h.HookEvent)
    assert read.kind == "heartbeat" and read.failed and read.path == f"{ROOT}/src/a.py"
    bash = {**failed, "tool_name": "Bash", "tool_input": {"command": "false"}}
    read = h.read_event(bash)
    assert isinstance(read, h.HookEvent) and read.kind == "heartbeat" and not read.failed
    odd = {**failed, "tool_input": "?"}
    read = h.read_event(odd)
    assert isinstance(read, h.HookEvent) and read.kind == "heartbeat" and not read.failed


def test_a_file_outside_the_repository_is_allowed_with_a_word_for_the_model() -> None:
    reply = h.outside("/etc/hosts")
    assert h.denied_reason(reply) is None
    said = reply["hookSpecificOutput"]["additionalContext"]
    assert "/etc/hosts" in said and "no lease" in said
