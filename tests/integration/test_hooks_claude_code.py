"""Claude Code's hooks against a real server, in both forms the harness offers: the HTTP hook
(the server answers the event itself) and the command hook (``tenure hook claude-code`` as a
real process, the event on stdin). The events are the recorded ones of ``fixtures/claude_code``:
two sessions, A and B, of one user in one git repository.

- B is blocked on the file A is editing, with A's task in the reason; A is never blocked by
  itself; A's ``SessionEnd`` frees the file at once; A killed without an end frees it after the
  ``files/`` TTL; a human's subtree lease blocks both (``test_*subtree*``);
- malformed events: an edit is blocked with a clear error (fail closed), a heartbeat or an end
  blocks nothing (fail open), a body that is no event is ``422``;
- a file outside the repository is allowed without a lease; the same file has the same key
  from a clone and from a worktree (``origin`` spelled either way, or none).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _hooks import (
    SESSION_A,
    SESSION_B,
    TASK_A,
    CommandHook,
    HttpHook,
    event,
    git,
    make_repo,
)

import tenure
from tenure.settings import Settings, parse_policy

KEY = "files/github.com/acme/shop/src/app.py"
Hook = HttpHook | CommandHook
Make = Callable[..., Hook]


@pytest.fixture(params=["http", "command"])
def form(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "shop")


@pytest.fixture
def hooks(form: str, live_server: Any, tmp_path: Path) -> Iterator[Make]:
    """``hooks(token=None, **env)``: a hook of the test's form for jo (one principal: A and B
    are two sessions of it, which exclude each other like strangers)."""
    made: list[Hook] = []
    jo = live_server.token_for("jo", kind="agent")

    def make(token: str | None = None, **env: str) -> Hook:
        hook: Hook
        if form == "http":
            hook = HttpHook(live_server.url, token or jo)
        else:
            hook = CommandHook(live_server.url, token or jo, tmp_path / "home", **env)
        made.append(hook)
        return hook

    yield make
    for hook in made:
        hook.close()


def lease_of(live_server: Any, key: str) -> tenure.Lease | None:
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        found = admin.list_leases(prefix=key)
    return next((lease for lease in found if lease.key == key), None)


def test_b_is_blocked_on_a_file_a_edits_with_a_task_in_the_reason(
    hooks: Make, repo: Path, live_server: Any
) -> None:
    hook = hooks()
    assert not hook.send(event("a_pre_edit", repo)).blocked
    lease = lease_of(live_server, KEY)
    assert lease is not None
    assert (lease.holder, lease.session, lease.task) == ("jo", SESSION_A, TASK_A)
    assert lease.ttl_ms == 600_000  # files/ default: 10 minutes

    b = hook.send(event("b_pre_edit", repo))
    assert b.blocked
    assert b.reason.startswith("lease_held: src/app.py is being edited elsewhere")
    for part in (f"session {SESSION_A}", f'task "{TASK_A}"', KEY, " UTC (in 10 min)"):
        assert part in b.reason, (part, b.reason)
    assert "Work on something else or wait" in b.reason
    assert b.reply is not None
    assert b.reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    # B may still edit another file, and run tools that edit nothing
    assert not hook.send(event("b_pre_write_other", repo)).blocked
    assert not hook.send(event("b_pre_bash", repo)).blocked


def test_a_is_never_blocked_by_itself(hooks: Make, repo: Path, live_server: Any) -> None:
    hook = hooks()
    first = hook.send(event("a_pre_edit", repo))
    lease = lease_of(live_server, KEY)
    assert lease is not None
    for name in ("a_pre_edit", "a_pre_multiedit", "a_post_edit", "a_pre_edit"):
        out = hook.send(event(name, repo))
        assert not out.blocked, out.reason
        assert out.reply == {}
    again = lease_of(live_server, KEY)
    assert again is not None and again.token == lease.token  # renewed, not re-acquired
    assert again.renewals >= 3
    assert not first.blocked
    for name in ("a_pre_write", "a_pre_notebook"):  # Write and NotebookEdit take their files
        assert not hook.send(event(name, repo)).blocked
    assert lease_of(live_server, "files/github.com/acme/shop/notebooks/eda.ipynb") is not None
    b = hook.send(event("b_pre_write_notebook_dir", repo))
    assert b.blocked and "notebooks/eda.ipynb" in b.reason


def test_a_session_end_frees_its_files_at_once(hooks: Make, repo: Path, live_server: Any) -> None:
    hook = hooks()
    hook.send(event("a_pre_edit", repo))
    hook.send(event("a_pre_write", repo))
    assert hook.send(event("b_pre_edit", repo)).blocked
    end = hook.send(event("a_session_end", repo))
    assert not end.blocked and end.reply == {}
    assert lease_of(live_server, KEY) is None
    assert not hook.send(event("b_pre_edit", repo)).blocked
    assert lease_of(live_server, KEY).session == SESSION_B  # type: ignore[union-attr]


def test_a_heartbeat_renews_only_its_own_session(hooks: Make, repo: Path, live_server: Any) -> None:
    hook = hooks()
    hook.send(event("a_pre_edit", repo))
    hook.send(event("b_pre_write_other", repo))
    a0 = lease_of(live_server, KEY)
    b0 = lease_of(live_server, "files/github.com/acme/shop/docs/readme.md")
    assert not hook.send(event("a_post_edit", repo)).blocked
    a1 = lease_of(live_server, KEY)
    b1 = lease_of(live_server, "files/github.com/acme/shop/docs/readme.md")
    assert a0 and a1 and b0 and b1
    assert a1.renewals == a0.renewals + 1 and b1.renewals == b0.renewals


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_killed_without_an_end_frees_its_file_after_the_ttl(
    form: str, store_url: str, repo: Path, tmp_path: Path, live_server: Any
) -> None:
    policy = '{"prefixes": {"files/": {"default_ttl": 5000, "min_ttl": 100}}}'
    live_server.stop()  # the same database, served with a short files/ TTL
    server = type(live_server)(store_url, Settings(db=store_url, policy=parse_policy(policy)))
    server.start()
    try:
        jo = server.token_for("jo", kind="agent")
        hook = _hook(form, server, jo, tmp_path)
        assert not hook.send(event("a_pre_edit", repo)).blocked
        # A is killed: no heartbeat, no SessionEnd. B is refused until the lease lapses.
        assert hook.send(event("b_pre_edit", repo)).blocked
        assert lease_of(server, KEY).ttl_ms == 5000  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while (out := hook.send(event("b_pre_edit", repo))).blocked:
            assert time.monotonic() < deadline, out.reason
            time.sleep(0.2)
        assert lease_of(server, KEY).session == SESSION_B  # type: ignore[union-attr]
        hook.close()
    finally:
        server.stop()


def test_a_humans_subtree_lease_blocks_both_sessions(
    hooks: Make, repo: Path, live_server: Any
) -> None:
    """Passes once subtree leases are in the engine (``scope: "subtree"``)."""
    human = live_server.token_for("ana", kind="human")
    with live_server.http(human) as http:
        got = http.post(
            "/v1/leases/acquire",
            json={
                "key": "files/github.com/acme/shop/src/",
                "scope": "subtree",
                "ttl_ms": 600_000,
                "task": "refactor billing",
            },
        )
        assert got.status_code == 200, got.text
    hook = hooks()
    for name in ("a_pre_edit", "b_pre_edit", "a_pre_write"):
        out = hook.send(event(name, repo))
        assert out.blocked, name
        assert 'ana (task "refactor billing") holds a lease on the whole folder' in out.reason
        assert "files/github.com/acme/shop/src/" in out.reason
    assert not hook.send(event("b_pre_write_other", repo)).blocked  # docs/: not under src/


@pytest.mark.parametrize(
    "name, field",
    [
        ("bad_edit_no_path", "tool_input.file_path"),
        ("bad_edit_path_number", "tool_input.file_path"),
        ("bad_pre_no_tool_name", "tool_name"),
        ("bad_edit_no_session", "session_id"),
    ],
)
def test_a_malformed_edit_is_blocked_with_a_clear_error(
    hooks: Make, repo: Path, name: str, field: str, live_server: Any
) -> None:
    out = hooks().send(event(name, repo))
    assert out.blocked
    assert out.reason.startswith(f"invalid_request: {field} ")
    assert "tenure blocks an edit it cannot check" in out.reason
    assert lease_of(live_server, "files/") is None  # nothing taken


@pytest.mark.parametrize("name", ["bad_post_no_session", "bad_end_session_number"])
def test_a_malformed_heartbeat_or_end_blocks_nothing(hooks: Make, repo: Path, name: str) -> None:
    hook = hooks()
    hook.send(event("a_pre_edit", repo))
    out = hook.send(event(name, repo))
    assert not out.blocked
    assert out.reply is not None and "invalid_request: session_id" in out.reply["systemMessage"]
    assert hook.send(event("b_pre_edit", repo)).blocked  # A's lease is still there


def test_a_body_that_is_no_hook_event(hooks: Make, repo: Path, form: str) -> None:
    hook = hooks()
    out = hook.send(event("bad_no_event_name", repo))
    assert not out.blocked  # not an edit: nothing to fail closed for
    if form == "http":
        assert out.status == 422 and out.reply is not None
        assert out.reply["code"] == "invalid_request"
        assert out.reply["field"] == "hook_event_name"
        garbage = hook.send("[1, 2]")  # not an object: it may be an edit, so it is refused
        assert garbage.status == 200 and garbage.blocked
        assert "invalid_request: the body is not a JSON object" in garbage.reason
    else:
        garbage = hook.send("not json")
        assert garbage.blocked and garbage.reason.startswith("invalid_request: the hook event")


def test_paths_outside_the_repository_are_allowed_without_a_lease(
    hooks: Make, repo: Path, live_server: Any
) -> None:
    hook = hooks()
    out = hook.send(event("b_pre_write_outside", repo))
    assert not out.blocked and out.reply is not None
    said = out.reply["hookSpecificOutput"]["additionalContext"]
    assert "outside the repository" in said and "no lease" in said
    assert lease_of(live_server, "files/") is None


@pytest.mark.parametrize("backend", ["sqlite"])
def test_edits_are_blocked_when_tenure_cannot_be_asked(
    repo: Path, tmp_path: Path, live_server: Any
) -> None:
    """The command hook fails closed for edits (open for the rest) when the server is down or
    refuses the token. (The HTTP hook's failures are a 2xx deny: test_hook_fail_closed.py; a
    server that cannot be reached at all is a non-blocking error Claude Code lets through.)"""
    down = CommandHook("http://127.0.0.1:9", "tnr_x", tmp_path / "home")
    out = down.send(event("a_pre_edit", repo))
    assert out.blocked and out.reason.startswith("tenure_unreachable: tenure at http://127.0.0.1:9")
    assert "tenure serve" in out.reason
    for name in ("a_post_edit", "a_session_end", "b_pre_bash"):
        assert not down.send(event(name, repo)).blocked
    refused = CommandHook(live_server.url, "tnr_not_a_token", tmp_path / "home")
    out = refused.send(event("a_pre_edit", repo))
    assert out.blocked and "unauthenticated" in out.reason  # the server's 200 deny, passed on
    assert "The token was refused" in out.reason


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize(
    "main_origin, clone_origin",
    [
        ("git@github.com:acme/shop.git", "https://github.com/acme/shop"),
        ("ssh://git@github.com:22/acme/shop.git", "https://token@github.com/acme/shop.git/"),
        (None, None),
    ],
)
def test_the_key_is_the_same_from_a_clone_and_a_worktree(
    form: str,
    live_server: Any,
    tmp_path: Path,
    main_origin: str | None,
    clone_origin: str | None,
) -> None:
    main = make_repo(tmp_path / "main", main_origin)
    worktree = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "feature", str(worktree))
    jo = live_server.token_for("jo", kind="agent")
    hook = _hook(form, live_server, jo, tmp_path)
    assert not hook.send(event("a_pre_edit", worktree)).blocked
    (lease,) = tenure.Client(live_server.url, token=jo).list_leases(prefix="files/")
    if main_origin:
        assert lease.key == KEY
    else:  # no origin: the main repository's root, for its worktrees too
        assert lease.key == f"files/{str(main).lstrip('/')}/src/app.py"
        blocked = hook.send(event("b_pre_edit", main))
        assert blocked.blocked and lease.key in blocked.reason
        return
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(main), str(clone))
    git(clone, "remote", "set-url", "origin", str(clone_origin))
    out = hook.send(event("b_pre_edit", clone))
    assert out.blocked and KEY in out.reason
    assert hook.send(event("b_pre_edit", main)).blocked  # the main checkout: the same key


@pytest.mark.parametrize("backend", ["sqlite"])
def test_tenure_repo_names_the_repository(
    form: str, live_server: Any, tmp_path: Path, repo: Path
) -> None:
    jo = live_server.token_for("jo", kind="agent")
    if form == "http":
        hook: Hook = HttpHook(live_server.url, jo, {"Tenure-Repo": "shop"})
        empty = HttpHook(live_server.url, jo, {"Tenure-Repo": ""})  # an unset variable
        assert not empty.send(event("b_pre_write_other", repo)).blocked
        assert lease_of(live_server, "files/github.com/acme/shop/docs/readme.md") is not None
        empty.close()
    else:
        hook = CommandHook(live_server.url, jo, tmp_path / "home", TENURE_REPO="shop")
    assert not hook.send(event("a_pre_edit", repo)).blocked
    assert lease_of(live_server, "files/shop/src/app.py") is not None
    hook.close()


def test_the_route_is_in_the_openapi_document(live_server: Any) -> None:
    with live_server.http(live_server.admin_token) as http:
        doc = http.get("/openapi.json").json()
    op = doc["paths"]["/v1/hooks/claude-code"]["post"]
    assert op["operationId"] == "hook_claude_code"
    names = {p["name"] for p in op["parameters"]}
    assert {"repo", "root", "Tenure-Repo", "Tenure-Root"} <= names
    json.dumps(op)


# helpers ---------------------------------------------------------------------------------------
def _hook(form: str, server: Any, token: str, tmp_path: Path) -> Hook:
    if form == "http":
        return HttpHook(server.url, token)
    return CommandHook(server.url, token, tmp_path / "home")
