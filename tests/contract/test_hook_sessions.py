"""A harness's sessions as tenure sessions (:mod:`tenure.service.hooks`), on every backend:
subagents in sessions of their own under their parent's, the task a prompt names, the lease of a
failed edit released, and the MCP tools acting in the hooks' session."""

from __future__ import annotations

from typing import Any

import tenure
from tenure import Service
from tenure.service.hooks import claude_code

ROOT = "/home/dev/shop"
REPO = "github.com/acme/shop"
KEY = f"files/{REPO}/src/a.py"
PARENT = "8c35adc1-5f0e-4c1b-9a57-0d2f1e9b7a11"
OTHER = "f41e0b9c-2d3a-4e8f-b6c5-7a9d1c2e3f40"
MINUTE = 60_000


def send(svc: Service, name: str, session: str = PARENT, **more: Any) -> dict[str, Any]:
    event = {"hook_event_name": name, "session_id": session, "cwd": ROOT, **more}
    return claude_code(svc, "jo", event, repo=REPO, root=ROOT)


def edit(svc: Service, session: str = PARENT, path: str = "src/a.py", **more: Any) -> str | None:
    """The deny reason of an edit of ``path``, ``None`` when it may go on."""
    tool = {"tool_name": "Edit", "tool_input": {"file_path": f"{ROOT}/{path}"}}
    reply = send(svc, "PreToolUse", session, **tool, **more)
    out = reply.get("hookSpecificOutput") or {}
    return out.get("permissionDecisionReason") if out.get("permissionDecision") else None


def holder(svc: Service, key: str = KEY) -> str | None:
    found = [x for x in svc.list(prefix=key) if x.key == key]
    return found[0].session if found else None


def test_sibling_subagents_exclude_each_other_and_their_parent(service: Service) -> None:
    assert edit(service, agent_id="a1", agent_type="general-purpose") is None
    assert holder(service) == f"{PARENT}/agent:a1"
    reason = edit(service, agent_id="a2")
    assert reason is not None and reason.startswith("lease_held: src/a.py")
    assert f"{PARENT}/agent:a1" in reason
    assert edit(service) is not None  # the parent waits for its running subagent's file
    assert edit(service, agent_id="a1") is None  # the subagent itself goes on
    assert edit(service, agent_id="a2", path="src/b.py") is None


def test_the_parents_end_releases_its_subagents_leases(service: Service) -> None:
    assert edit(service, agent_id="a1") is None
    assert edit(service, agent_id="a2", path="src/b.py") is None
    assert edit(service, path="src/c.py") is None
    assert edit(service, OTHER, path="src/d.py") is None
    assert holder(service, f"files/{REPO}/src/b.py") == f"{PARENT}/agent:a2"
    send(service, "SessionEnd", reason="exit")
    assert [x.key for x in service.list(holder="jo")] == [f"files/{REPO}/src/d.py"]
    assert edit(service, OTHER) is None


def test_the_parents_heartbeat_keeps_its_subagents_leases_alive(
    service: Service, clock: tenure.FakeClock
) -> None:
    assert edit(service, agent_id="a1") is None
    assert edit(service, OTHER, path="src/d.py") is None
    clock.advance(9 * MINUTE)
    send(service, "PostToolUse", tool_name="Task", tool_input={})
    clock.advance(2 * MINUTE)  # past the first deadline (ten minutes)
    assert holder(service) == f"{PARENT}/agent:a1"
    assert holder(service, f"files/{REPO}/src/d.py") is None  # another session's: lapsed


def test_a_subagents_heartbeat_keeps_its_waiting_parents_leases_alive(
    service: Service, clock: tenure.FakeClock
) -> None:
    assert edit(service) is None
    assert edit(service, agent_id="a1", path="src/b.py") is None
    clock.advance(9 * MINUTE)
    send(service, "PostToolUse", agent_id="a1", tool_name="Read", tool_input={})
    clock.advance(2 * MINUTE)
    assert holder(service) == PARENT
    assert holder(service, f"files/{REPO}/src/b.py") == f"{PARENT}/agent:a1"


def test_a_prompts_first_line_is_the_task_a_blocked_edit_names(service: Service) -> None:
    prompt = "Refactor billing retries\nthe key is sk-live-123"
    send(service, "UserPromptSubmit", prompt=prompt, prompt_id="p-1")
    send(service, "UserPromptSubmit", prompt="yes, go on", prompt_id="p-2")
    assert edit(service, prompt_id="p-2") is None
    assert [x.task for x in service.list(holder="jo")] == ["Refactor billing retries"]
    reason = edit(service, OTHER)
    assert reason is not None and 'task "Refactor billing retries"' in reason
    assert "sk-live" not in reason
    assert edit(service, agent_id="a1", path="src/b.py") is None
    tasks = {x.key: x.task for x in service.list(holder="jo")}
    assert tasks[f"files/{REPO}/src/b.py"] == "Refactor billing retries (subagent)"
    send(service, "SessionEnd")
    assert service.store.session_task("jo", PARENT) is None
    assert edit(service, OTHER) is None
    assert [x.task for x in service.list(holder="jo")] == [OTHER]


def test_a_failed_edit_releases_the_file_it_took_and_only_that(service: Service) -> None:
    failed = {"tool_name": "Edit", "tool_input": {"file_path": f"{ROOT}/src/a.py"}}
    assert edit(service) is None
    send(service, "PostToolUseFailure", error="String to replace not found", **failed)
    assert holder(service) is None
    assert edit(service) is None  # edited, then renewed by its PostToolUse
    send(service, "PostToolUse", **failed)
    assert edit(service) is None
    send(service, "PostToolUseFailure", error="String to replace not found", **failed)
    assert holder(service) == PARENT  # held before the edit that failed: kept
    send(service, "PostToolUseFailure", OTHER, **failed)
    assert holder(service) == PARENT  # another session's failure touches nothing of this one


def test_the_sessions_own_subtree_lock_does_not_block_its_edits(service: Service) -> None:
    service.acquire("jo", f"files/{REPO}/src/", session=PARENT, scope="subtree")
    assert edit(service) is None
    reason = edit(service, OTHER, path="src/b.py")
    assert reason is not None and "whole folder" in reason
    send(service, "SessionEnd")
    assert service.list(holder="jo") == []


def test_compaction_forgets_the_tasks_of_sessions_quiet_for_a_day(
    service: Service, clock: tenure.FakeClock
) -> None:
    send(service, "UserPromptSubmit", prompt="Refactor billing retries")
    send(service, "UserPromptSubmit", OTHER, prompt="Fix the login page")
    clock.advance(20 * 60 * MINUTE)
    send(service, "UserPromptSubmit", OTHER, prompt="and the logout page")  # still in use
    clock.advance(5 * 60 * MINUTE)
    service.compact()
    assert service.store.session_task("jo", PARENT) is None
    assert service.store.session_task("jo", OTHER) == "Fix the login page"
