"""Edits tenure only detects, on each backend: a heartbeat (``PostToolUse`` of ``Bash``) that
carries the files the tool changed (``tenure_changed``, as the command hook sends it) reports
those another session holds: an ``unleased_edit`` event naming the file, the session that
changed it, the holder, its session and task, and a ``decision: "block"`` whose reason the
model reads. The session's own files, free files and changes older than the holder's last
renewal are not reported.
"""

from __future__ import annotations

from typing import Any

import tenure
from tenure import Service
from tenure.service.hooks import claude_code

ROOT = "/home/dev/shop"
REPO = "github.com/acme/shop"
KEY = f"files/{REPO}/src/app.py"


def edit(session: str, path: str = "src/app.py", task: str = "prompt-a") -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": ROOT,
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": f"{ROOT}/{path}"},
        "prompt_id": task,
    }


def bash_ran(session: str, *changed: tuple[str, int]) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": ROOT,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "echo >> src/app.py"},
        "tenure_changed": [{"path": p, "at": at} for p, at in changed],
    }


def hook(svc: Service, who: str, event: dict[str, Any]) -> dict[str, Any]:
    return claude_code(svc, who, event, repo=REPO, root=ROOT)


def test_a_change_to_a_file_another_session_holds_is_reported(
    service: Service, clock: tenure.FakeClock
) -> None:
    assert hook(service, "jo", edit("A")) == {}  # A leases src/app.py
    assert hook(service, "jo", edit("B", "src/mine.py")) == {}
    clock.advance(1000)
    changed_at = clock.now_ms() - 10
    start = service.store.last_event_id()
    reply = hook(
        service, "jo", bash_ran("B", ("src/app.py", changed_at), ("src/mine.py", changed_at),
                                ("README.md", changed_at)),
    )  # fmt: skip
    assert reply["decision"] == "block"
    assert "src/app.py: held by jo, session A" in reply["reason"]
    assert 'task "prompt-a"' in reply["reason"] and "mine.py" not in reply["reason"]
    assert "src/app.py" in reply["systemMessage"]
    [event] = [e for e in service.events(after=start, limit=100) if e.type == "unleased_edit"]
    assert (event.key, event.holder, event.actor, event.task) == (KEY, "jo", "jo", "prompt-a")
    assert event.data == {
        "session": "B",
        "path": "src/app.py",
        "changed_at": changed_at,
        "held_key": KEY,
        "holder_session": "A",
    }
    assert [x.key for x in service.list(holder="jo")] == [KEY, f"files/{REPO}/src/mine.py"]


def test_nothing_is_reported_for_own_free_or_older_changes(
    service: Service, clock: tenure.FakeClock
) -> None:
    hook(service, "jo", edit("A"))
    before_renewal = clock.now_ms() - 1
    start = service.store.last_event_id()
    assert hook(service, "jo", bash_ran("A", ("src/app.py", clock.now_ms() + 5))) == {}
    assert hook(service, "jo", bash_ran("B", ("src/app.py", before_renewal))) == {}
    assert hook(service, "jo", bash_ran("B", ("docs/free.md", clock.now_ms() + 5))) == {}
    assert hook(service, "jo", bash_ran("B")) == {}
    assert [e.type for e in service.events(after=start, limit=100)] == []


def test_a_person_s_subtree_lease_covers_the_changes_under_it(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("ana", f"files/{REPO}/src/", task="billing", scope="subtree")
    clock.advance(1000)
    reply = hook(service, "jo", bash_ran("B", ("src/deep/x.py", clock.now_ms())))
    assert "src/deep/x.py: held by ana" in reply["reason"]
    assert f"a lease on the whole folder files/{REPO}/src/" in reply["reason"]
