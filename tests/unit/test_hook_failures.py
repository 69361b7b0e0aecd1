"""The pure half of the HTTP hook's failing closed: which bodies count as an edit, what is kept
of an event, and what a failed request's deny says."""

from __future__ import annotations

from tenure.core import hook_failures as hf
from tenure.core.hooks import denied_reason


def test_what_counts_as_an_edit() -> None:
    for tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        assert hf.is_edit({"hook_event_name": "PreToolUse", "tool_name": tool})
    assert hf.is_edit({"hook_event_name": "PreToolUse"})  # no tool named: it may be one
    assert hf.is_edit([1, 2]) and hf.is_edit("PreToolUse") and hf.is_edit(None)
    assert not hf.is_edit({"hook_event_name": "PreToolUse", "tool_name": "Bash"})
    for name in ("PostToolUse", "PostToolUseFailure", "SessionEnd", None):
        assert not hf.is_edit({"hook_event_name": name, "tool_name": "Write"})


def test_slim_keeps_what_the_decision_reads_and_drops_the_content() -> None:
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "cwd": "/r",
        "agent_id": "a1",
        "tool_name": "Write",
        "tool_input": {"file_path": "/r/x.py", "content": "x" * 1000, "old_string": "y"},
        "tool_response": {"filePath": "/r/x.py", "content": "x" * 1000},
    }
    assert hf.slim(event) == {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "cwd": "/r",
        "agent_id": "a1",
        "tool_name": "Write",
        "tool_input": {"file_path": "/r/x.py"},
    }
    notebook = {"tool_input": {"notebook_path": "/r/n.ipynb", "new_source": "z"}}
    assert hf.slim(notebook) == {"tool_input": {"notebook_path": "/r/n.ipynb"}}
    assert hf.slim({"tool_input": "odd"}) == {"tool_input": "odd"}  # left for the route to refuse


def test_a_failed_request_is_a_deny_that_says_what_and_how() -> None:
    no_token = {"code": "unauthenticated", "detail": "a valid bearer token is required"}
    for sent in (None, "", "Bearer", "bearer "):
        reason = denied_reason(hf.failed(no_token, 401, sent))
        assert reason is not None and "No tenure token was sent" in reason
        assert reason.startswith("tenure could not check this edit (unauthenticated: a valid")
    refused = denied_reason(hf.failed(no_token, 401, "Bearer tnr_x"))
    assert refused is not None and "The token was refused" in refused
    limited = {"code": "rate_limited", "detail": "too many", "retry_after_s": 7}
    assert "retry in 7 s" in str(denied_reason(hf.failed(limited, 429, "Bearer x")))
    bare = denied_reason(hf.failed({}, 503, None))
    assert bare is not None and "(unavailable: HTTP 503)" in bare and "database" in bare
    for reply in (hf.too_large(10, 5), hf.not_json("bad"), hf.body_late(1.5)):
        assert str(denied_reason(reply)).endswith("The edit is blocked until this is fixed: "
                                                  "tell the user.")  # fmt: skip
