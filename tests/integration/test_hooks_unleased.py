"""A shell command that changes a held file, through the real command hook and a real server:
session A edits ``src/app.py`` (leased by its ``PreToolUse``), session B appends to it with
``Bash``; B's ``PostToolUse`` hook (``tenure hook claude-code``) finds the change with ``git
status`` and the model is told at once (``decision: "block"`` with the reason), the
``unleased_edit`` event is in the log, and the same change is not reported again on B's next
tool call. The HTTP hook form cannot look at the working tree: it reports nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _hooks import SESSION_A, SESSION_B, CommandHook, HttpHook, event, make_repo

import tenure

KEY = "files/github.com/acme/shop/src/app.py"


def test_a_bash_append_to_a_held_file_is_told_and_recorded(
    live_server: Any, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shop")
    jo = live_server.token_for("jo", kind="agent")
    hook = CommandHook(
        live_server.url, jo, tmp_path / "home", TENURE_STATE_DIR=str(tmp_path / "st")
    )
    assert not hook.send(event("a_pre_edit", repo)).blocked  # A holds src/app.py
    with (repo / "src" / "app.py").open("a") as f:  # B's `echo >> src/app.py`
        f.write("y = 2\n")

    out = hook.send(event("b_post_bash", repo))
    assert not out.blocked and out.reply is not None  # the tool ran: nothing to block
    assert out.reply["decision"] == "block"
    assert f"src/app.py: held by jo, session {SESSION_A}" in out.reply["reason"]
    assert "Undo your own changes" in out.reply["reason"]
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        [ev] = [e for e in admin.events(limit=1000) if e.type == "unleased_edit"]
    assert (ev.key, ev.holder, ev.actor) == (KEY, "jo", "jo")
    assert (ev.data["session"], ev.data["holder_session"]) == (SESSION_B, SESSION_A)

    again = hook.send(event("b_post_bash", repo))  # the same change: told once
    assert again.reply in ({}, None) or "decision" not in again.reply

    http = HttpHook(live_server.url, jo)
    try:
        assert "decision" not in (http.send(event("b_post_bash", repo)).reply or {})
    finally:
        http.close()
