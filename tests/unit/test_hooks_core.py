"""The pure half of the harness hooks (tenure.core.hooks): reading an event, a file's key,
the repository's name from its remote URL, and the replies."""

from __future__ import annotations

from typing import Any

import pytest

from tenure.core import hooks as h
from tenure.core.policy import FILES_TTL, Policy, PolicySet

ROOT = "/home/dev/shop"


def pre(tool: Any = "Edit", **tool_input: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s-1",
        "cwd": ROOT,
        "tool_name": tool,
        "tool_input": tool_input or {"file_path": f"{ROOT}/src/app.py"},
        "transcript_path": "/x.jsonl",
        "anything": {"else": [1, 2]},
    }


@pytest.mark.parametrize(
    "url, name",
    [
        ("git@github.com:acme/shop.git", "github.com/acme/shop"),
        ("https://github.com/acme/shop", "github.com/acme/shop"),
        ("https://github.com/acme/shop.git/", "github.com/acme/shop"),
        ("https://user:secret@GitHub.com/acme/shop.git", "github.com/acme/shop"),
        ("ssh://git@github.com:22/acme/shop.git", "github.com/acme/shop"),
        ("ssh://git@[::1]:2222/acme/shop.git", "::1/acme/shop"),
        ("git://gitlab.example.org/group/sub/shop.git", "gitlab.example.org/group/sub/shop"),
        ("gitlab.example.org:group/shop", "gitlab.example.org/group/shop"),
        ("/srv/git/shop.git", "srv/git/shop"),
        ("file:///srv/git/shop.git", "srv/git/shop"),
        ("../shop.git", "../shop"),
        ("  ", None),
    ],
)
def test_a_remote_url_is_spelled_one_way(url: str, name: str | None) -> None:
    assert h.repo_from_remote(url) == name


def test_a_repository_without_remote_is_named_by_its_root() -> None:
    assert h.repo_from_root("/home/dev/shop/") == "home/dev/shop"
    assert h.repo_from_root("/home/dev/./shop") == "home/dev/shop"


@pytest.mark.parametrize(
    "path, cwd, rel",
    [
        (f"{ROOT}/src/app.py", ROOT, "src/app.py"),
        (f"{ROOT}/src/../README.md", ROOT, "README.md"),
        ("src/app.py", f"{ROOT}/", "src/app.py"),
        ("../x.py", f"{ROOT}/src", "x.py"),
        ("/home/dev/shopping/x.py", ROOT, None),  # a sibling whose name starts the same
        ("/etc/passwd", ROOT, None),
        (ROOT, ROOT, None),
        (f"{ROOT}/../other/x", ROOT, None),
    ],
)
def test_a_files_path_from_the_repository_root(path: str, cwd: str, rel: str | None) -> None:
    assert h.relative_path(ROOT, path, cwd) == rel


def test_a_files_key() -> None:
    assert (
        h.file_key("github.com/acme/shop", "src/app.py") == "files/github.com/acme/shop/src/app.py"
    )


@pytest.mark.parametrize(
    "tool, field", [("Edit", "file_path"), ("Write", "file_path"), ("MultiEdit", "file_path"),
                    ("NotebookEdit", "notebook_path")],
)  # fmt: skip
def test_the_edit_tools_and_their_path(tool: str, field: str) -> None:
    read = h.read_event(pre(tool, **{field: f"{ROOT}/a.ipynb"}))
    path = f"{ROOT}/a.ipynb"
    assert read == h.HookEvent("edit", "PreToolUse", "s-1", ROOT, path, "s-1", parent="s-1")


def test_the_task_is_the_prompt_when_there_is_one() -> None:
    read = h.read_event({**pre(), "prompt_id": "p-9"})
    assert isinstance(read, h.HookEvent) and read.task == "p-9"


@pytest.mark.parametrize(
    "event, kind",
    [
        (pre("Bash", command="ls"), "other"),
        (pre("Read", file_path="/x"), "other"),
        ({"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/"}, "heartbeat"),
        ({"hook_event_name": "PostToolUseFailure", "session_id": "s"}, "heartbeat"),
        ({"hook_event_name": "SessionEnd", "session_id": "s", "reason": "clear"}, "end"),
        ({"hook_event_name": "SessionStart", "session_id": 7}, "other"),
        ({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hi"}, "prompt"),
        ({"hook_event_name": "Stop", "prompt": "hi"}, "other"),
    ],
)
def test_the_kind_of_each_event(event: dict[str, Any], kind: str) -> None:
    read = h.read_event(event)
    assert isinstance(read, h.HookEvent) and read.kind == kind


@pytest.mark.parametrize(
    "event, kind, field",
    [
        ({**pre(), "hook_event_name": None}, "other", "hook_event_name"),
        ({k: v for k, v in pre().items() if k != "tool_name"}, "edit", "tool_name"),
        (pre(3), "edit", "tool_name"),
        ({**pre(), "session_id": ""}, "edit", "session_id"),
        ({**pre(), "session_id": "x" * 129}, "edit", "session_id"),
        ({**pre(), "session_id": "a\nb"}, "edit", "session_id"),
        ({**pre(), "tool_input": "x"}, "edit", "tool_input"),
        (pre("Edit", old_string="a"), "edit", "tool_input.file_path"),
        (pre("NotebookEdit", file_path="/x"), "edit", "tool_input.notebook_path"),
        (pre("Write", file_path="a\x00b"), "edit", "tool_input.file_path"),
        ({**pre(), "cwd": "relative"}, "edit", "cwd"),
        ({**pre(), "cwd": None}, "edit", "cwd"),
        ({**pre(), "prompt_id": 5}, "edit", "prompt_id"),
        ({"hook_event_name": "PostToolUse"}, "heartbeat", "session_id"),
        ({"hook_event_name": "SessionEnd", "session_id": 7}, "end", "session_id"),
    ],
)
def test_a_malformed_event_names_its_field(event: dict[str, Any], kind: str, field: str) -> None:
    read = h.read_event(event)
    assert read == h.Malformed(kind, field, read.message)  # type: ignore[union-attr]
    assert isinstance(read, h.Malformed)
    assert read.message.startswith(f"invalid_request: {field} must ")
    assert h.kind_of(event) == kind or field == "hook_event_name"


def test_the_replies() -> None:
    assert h.allow() == {}  # never "allow": that would skip the harness's own permission rules
    denied = h.deny("because")
    assert denied == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "because",
        }
    }
    assert h.denied_reason(denied) == "because"
    assert h.denied_reason({}) is None
    assert h.denied_reason(h.warn("w")) is None and h.warn("w") == {"systemMessage": "w"}


def test_the_reason_names_holder_session_task_and_expiry() -> None:
    now = 1_800_000_000_000
    key = "files/r/src/app.py"
    by = h.Holder(key, "jo", "sess-A", "fix login", now + 7 * 60_000 + 20_000)
    said = h.held_reason("src/app.py", key, by, now)
    assert said == (
        'lease_held: src/app.py is being edited elsewhere: jo (session sess-A, task "fix '
        'login") holds a lease on files/r/src/app.py until 2027-01-15 08:07:20 UTC (in 7 '
        "min). Work on something else or wait until it is released (a lease lapses when its "
        "session stops); do not edit this file meanwhile."
    )
    folder = h.Holder("files/r/src/", "ana", None, None, now + 30_000)
    said = h.held_reason("src/app.py", key, folder, now)
    assert "ana holds a lease on the whole folder files/r/src/ until" in said
    assert "(in 30 s)" in said


def test_files_keys_default_to_ten_minutes() -> None:
    policy = PolicySet()
    assert policy.for_key("files/r/a.py").default_ttl == FILES_TTL == 600_000
    assert policy.for_key("jobs/a").default_ttl == 30_000
    changed = policy.with_prefix("files/", max_ttl=3_600_000)
    assert changed.for_key("files/x").default_ttl == FILES_TTL  # starts from the built-in one
    assert changed.for_key("files/x").max_ttl == 3_600_000
    short = PolicySet(Policy(max_lease=60_000, max_ttl=60_000, default_ttl=1_000))
    assert short.for_key("files/x").default_ttl == 60_000  # within max_lease
    assert PolicySet() == PolicySet() and len(PolicySet().overrides) == 1


def test_a_hook_event_may_not_name_an_mcp_connections_session() -> None:
    from tenure.core.validate import RESERVED_SESSION_PREFIX

    assert h.MCP_SESSIONS == RESERVED_SESSION_PREFIX
    event = {"hook_event_name": "PostToolUse", "session_id": "mcp-http:0123", "cwd": "/r"}
    read = h.read_event(event)
    assert isinstance(read, h.Malformed) and read.field == "session_id"
    assert isinstance(h.read_event({**event, "session_id": "mcp:0123"}), h.HookEvent)
