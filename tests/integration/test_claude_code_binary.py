"""The real Claude Code binary (``@anthropic-ai/claude-code``, the version pinned in
``_claude_code.VERSION``) with tenure's hooks, as ``tenure agent setup claude-code`` writes
them, against a real tenure server. The model is a scripted stand-in on loopback
(``_model_api``) that plays fixed tool calls; the tests assert on what the binary did (the
files, the leases, the events) and on what the model was told (the ``tool_result`` blocks).

Every setup that the docs or ``tenure agent setup`` lead to must block an edit of a held file:
a second session's ``Write``, a session started without ``tenure`` on its ``PATH``, an HTTP hook
without a token or with an edit over the body limit, a sibling subagent, a path through a
symlink; a ``Bash`` append to a held file cannot be prevented and must be reported (to the
model, and as an ``unleased_edit`` event).

SQLite only (``backend`` pinned below): these test the hooks as the harness runs them; the
routes they call are proven on both backends by the contract and server suites. The tier runs
in ``./dev test`` (which installs the binary); ``-m claude_code`` selects it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _claude_code import ClaudeCode, Run, setup_repo
from _hooks import HttpHook
from _model_api import ToolResult, Turn, parallel, text, tool

import tenure
from procs import wait_for

pytestmark = pytest.mark.claude_code

SHARED_KEY = "files/github.com/acme/shop/src/shared.py"


@pytest.fixture
def backend() -> str:
    """SQLite only: see the module docstring."""
    return "sqlite"


@pytest.fixture
def agent_token(live_server: Any) -> str:
    return str(live_server.token_for("claude", kind="agent"))


@pytest.fixture
def claude(tmp_path: Path, live_server: Any, agent_token: str) -> Iterator[ClaudeCode]:
    runner = ClaudeCode(tmp_path, live_server.url, agent_token)
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture
def repo(tmp_path: Path, live_server: Any, agent_token: str) -> Path:
    return setup_repo(tmp_path / "shop", live_server.url, agent_token)


def lease_of(live_server: Any, key: str) -> tenure.Lease | None:
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        found = admin.list_leases(prefix=key)
    return next((lease for lease in found if lease.key == key), None)


def events_of(live_server: Any, **query: str) -> list[dict[str, Any]]:
    with live_server.http(live_server.admin_token) as http:
        got = http.get("/v1/events", params={"limit": "500", **query})
    assert got.status_code == 200, got.text
    found: list[dict[str, Any]] = got.json()["events"]
    return found


def test_one_session_writes_a_file_under_a_lease_released_at_its_end(
    claude: ClaudeCode, repo: Path, live_server: Any
) -> None:
    """The harness itself: the binary runs offline against the stand-in, tenure's hooks take
    the file's lease before the ``Write`` and ``SessionEnd`` releases it."""
    script = {
        "TASK-SOLO": [
            tool("Write", file_path=str(repo / "src" / "shared.py"), content="shared = 2\n"),
            tool("Bash", command="echo checked", description="check"),
            text("done"),
        ]
    }
    run = claude.run(repo, script, "TASK-SOLO: change shared.py")
    assert run.returncode == 0, run.describe()
    (wrote,) = run.results("Write")
    assert not wrote.is_error and "successfully" in wrote.content, run.describe()
    assert (repo / "src" / "shared.py").read_text() == "shared = 2\n"
    taken = events_of(live_server, key=SHARED_KEY, type="acquired")
    assert len(taken) == 1, (taken, run.describe())
    assert taken[0]["holder"] == "claude", taken
    assert lease_of(live_server, SHARED_KEY) is None  # SessionEnd released it
    assert claude.sink.attempts == []  # nothing tried to leave the machine
    assert run.api.unknown == []  # nor asked the stand-in for anything but messages


# Scenarios: every setup must block an edit of a held file -------------------------------------
HOLDER_SESSION = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"


def hold(live_server: Any, token: str, repo: Path, rel: str = "src/shared.py") -> None:
    """Another Claude Code session of the same principal takes ``rel`` through the hook route
    (its ``PreToolUse`` of a ``Write``), and stays alive (no ``SessionEnd``)."""
    hook = HttpHook(live_server.url, token)
    try:
        out = hook.send(
            {
                "session_id": HOLDER_SESSION,
                "transcript_path": "/dev/null",
                "cwd": str(repo),
                "permission_mode": "acceptEdits",
                "hook_event_name": "PreToolUse",
                "tool_name": "Write",
                "tool_input": {"file_path": str(repo / rel), "content": "held\n"},
                "tool_use_id": "toolu_hold",
            }
        )
    finally:
        hook.close()
    assert not out.blocked, out.reason
    assert lease_of(live_server, f"files/github.com/acme/shop/{rel}") is not None


def write(path: Path, content: str) -> Turn:
    return tool("Write", file_path=str(path), content=content)


def bash(command: str) -> Turn:
    return tool("Bash", command=command, description="run a command", timeout=60_000)


def wait_until(path: Path) -> Turn:
    """A ``Bash`` call that returns once ``path`` exists (at most 60 s): a session held open."""
    return bash(f"for i in $(seq 600); do [ -e {path} ] && exit 0; sleep 0.1; done; exit 1")


def assert_blocked(run: Run, result: ToolResult, file: Path, before: str) -> None:
    assert result.is_error, run.describe()
    assert "successfully" not in result.content, run.describe()
    assert "lease_held" in result.content, run.describe()
    assert file.read_text() == before, "the held file was changed"


def test_a_second_session_is_blocked_on_the_file_the_first_holds(
    claude: ClaudeCode, repo: Path, live_server: Any, tmp_path: Path
) -> None:
    """Two real sessions: A writes ``src/shared.py`` and stays alive; B's ``Write`` of it is
    blocked, and B's model is told who holds it and for what task (A's prompt's first line)."""
    shared = repo / "src" / "shared.py"
    go_on = tmp_path / "a-may-end"
    a = claude.start(
        repo,
        {"TASK-A": [write(shared, "shared = 'A'\n"), wait_until(go_on), text("done")]},
        "TASK-A: refactor the shared helpers\nKeep the public names.",
    )
    wait_for(
        lambda: lease_of(live_server, SHARED_KEY) or a.proc.poll() is not None, 60, "A's lease"
    )
    lease = lease_of(live_server, SHARED_KEY)
    assert lease is not None, a.wait().describe()
    b = claude.run(
        repo,
        {"TASK-B": [write(shared, "shared = 'B'\n"), text("I will wait")]},
        "TASK-B: rename shared",
    )
    go_on.touch()
    a_run = a.wait()
    assert a_run.returncode == 0, a_run.describe()
    (a_wrote,) = a_run.results("Write")
    assert not a_wrote.is_error, a_run.describe()
    (b_wrote,) = b.results("Write")
    assert_blocked(b, b_wrote, shared, "shared = 'A'\n")
    for part in ("src/shared.py", lease.session, "refactor the shared helpers"):
        assert part in b_wrote.content, (part, b_wrote.content)
    assert lease_of(live_server, SHARED_KEY) is None  # A's end released it


def test_an_edit_is_blocked_when_tenure_is_not_on_the_harness_path(
    claude: ClaudeCode, repo: Path, live_server: Any, agent_token: str
) -> None:
    """Setup was run with ``tenure`` on the user's ``PATH``; Claude Code is started from a
    shell without it. The hook must still run (or fail as a block), never let the edit by."""
    hold(live_server, agent_token, repo)
    shared = repo / "src" / "shared.py"
    run = claude.run(
        repo,
        {"TASK-NOPATH": [write(shared, "overwritten\n"), text("done")]},
        "TASK-NOPATH: change shared.py",
        env=claude.env(path="/usr/local/bin:/usr/bin:/bin"),
    )
    (wrote,) = run.results("Write")
    assert wrote.is_error and "successfully" not in wrote.content, run.describe()
    assert shared.read_text() == "shared = 1\n"


def test_an_http_hook_without_a_token_blocks_the_edit(
    claude: ClaudeCode, tmp_path: Path, live_server: Any, agent_token: str
) -> None:
    """``setup --http``, then Claude Code started without ``TENURE_TOKEN``: it sends an empty
    bearer; the answer must be a block Claude Code honours (a 2xx deny), saying what is wrong."""
    repo = setup_repo(tmp_path / "shop", live_server.url, agent_token, "--http")
    shared = repo / "src" / "shared.py"
    env = claude.env()
    del env["TENURE_TOKEN"]
    run = claude.run(
        repo,
        {"TASK-NOTOKEN": [write(repo / "src" / "app.py", "unchecked\n"), text("done")]},
        "TASK-NOTOKEN: change app.py",
        env=env,
    )
    (wrote,) = run.results("Write")
    assert wrote.is_error and "successfully" not in wrote.content, run.describe()
    assert "token" in wrote.content.lower(), wrote.content  # says what is wrong
    assert (repo / "src" / "app.py").read_text() == "x = 1\n"
    assert shared.read_text() == "shared = 1\n"


def test_an_http_hook_blocks_a_big_edit_of_a_held_file(
    claude: ClaudeCode, tmp_path: Path, live_server: Any, agent_token: str
) -> None:
    """``setup --http`` with a token: a ``Write`` of 5 MiB (over the server's body limit when
    the event carries the content) of a held file is still decided, and blocked."""
    repo = setup_repo(tmp_path / "shop", live_server.url, agent_token, "--http")
    hold(live_server, agent_token, repo)
    shared = repo / "src" / "shared.py"
    big = "x = 1\n" * (5 * 1024 * 1024 // 6)
    run = claude.run(
        repo,
        {"TASK-BIG": [write(shared, big), text("done")]},
        "TASK-BIG: regenerate shared.py",
    )
    (wrote,) = run.results("Write")
    assert_blocked(run, wrote, shared, "shared = 1\n")


def test_of_two_subagents_writing_one_file_the_second_is_blocked(
    claude: ClaudeCode, repo: Path, live_server: Any, tmp_path: Path
) -> None:
    """One session starts two subagents at once (two ``Agent`` calls in one turn); both write
    ``src/shared.py``. The one that comes second (it waits until the first has written) is
    blocked: siblings are sessions of their own."""
    shared = repo / "src" / "shared.py"
    second_done = tmp_path / "second-done"
    sub = {"description": "edit shared", "subagent_type": "claude", "run_in_background": False}
    script = {
        "TASK-PARENT": [
            parallel(
                tool("Agent", prompt="SUB-ONE: write shared.py", **sub),
                tool("Agent", prompt="SUB-TWO: write shared.py", **sub),
            ),
            text("both done"),
        ],
        "SUB-ONE": [write(shared, "shared = 'one'\n"), wait_until(second_done), text("one")],
        "SUB-TWO": [
            bash(f"for i in $(seq 600); do grep -q one {shared} && exit 0; sleep 0.1; done"),
            write(shared, "shared = 'two'\n"),
            bash(f"touch {second_done}"),
            text("two"),
        ],
    }
    run = claude.run(repo, script, "TASK-PARENT: two helpers edit shared.py", timeout=120)
    assert run.returncode == 0, run.describe()
    (one,) = run.api.result_of("Write", "SUB-ONE")
    assert not one.is_error, run.describe()
    (two,) = run.api.result_of("Write", "SUB-TWO")
    assert_blocked(run, two, shared, "shared = 'one'\n")


@pytest.mark.parametrize("through", ["folder", "cwd"])
def test_a_path_through_a_symlink_to_a_held_file_is_blocked(
    claude: ClaudeCode, repo: Path, live_server: Any, agent_token: str, through: str
) -> None:
    """``lib`` is a symlink to ``src`` in the repository (``folder``), or the session works in
    a symlink to the repository (``cwd``): either way the path names the held
    ``src/shared.py`` and must be refused like it."""
    hold(live_server, agent_token, repo)
    shared = repo / "src" / "shared.py"
    if through == "folder":
        (repo / "lib").symlink_to("src")
        cwd, path = repo, repo / "lib" / "shared.py"
    else:
        cwd = repo.parent / "shop-link"
        cwd.symlink_to(repo)
        path = cwd / "src" / "shared.py"
    run = claude.run(
        repo,
        {
            "TASK-LINK": [
                tool("Read", file_path=str(path)),  # the binary writes only files it has read
                write(path, "through the link\n"),
                text("done"),
            ]
        },
        "TASK-LINK: change shared.py",
        cwd=cwd,
        env=claude.env(PWD=str(cwd)),  # started from a shell standing in the link
    )
    (wrote,) = run.results("Write")
    assert_blocked(run, wrote, shared, "shared = 1\n")
    assert "src/shared.py" in wrote.content


def test_a_bash_append_to_a_held_file_is_told_and_recorded(
    claude: ClaudeCode, repo: Path, live_server: Any, agent_token: str
) -> None:
    """``echo >> src/shared.py`` cannot be prevented (a hook cannot read a shell command's
    effects in advance); it is detected after the call: the model is told at once, and an
    ``unleased_edit`` event names the file, the session and the holder."""
    hold(live_server, agent_token, repo)
    run = claude.run(
        repo,
        {"TASK-BASH": [bash("echo '# more' >> src/shared.py"), text("done")]},
        "TASK-BASH: append to shared.py",
    )
    assert run.returncode == 0, run.describe()
    (appended,) = run.results("Bash")
    told = run.told_after(appended)
    assert "src/shared.py" in told, run.describe()
    found = events_of(live_server, key=SHARED_KEY, type="unleased_edit")
    assert len(found) == 1, found
    said = json.dumps(found[0])
    assert str(run.session_id) in said and HOLDER_SESSION in said, found


def test_an_mcp_lock_then_an_edit_in_the_same_session_is_allowed(
    claude: ClaudeCode, repo: Path, live_server: Any
) -> None:
    """The agent takes ``src/`` (a subtree) with tenure's MCP tool ``acquire_lock``, then edits
    a file under it: the hooks and the MCP server act as one session, so it is allowed."""
    shared = repo / "src" / "shared.py"
    subtree = "files/github.com/acme/shop/src/"
    script = {
        "TASK-MCP": [
            tool(
                "mcp__tenure__acquire_lock",
                key=subtree,
                scope="subtree",
                ttl_ms=600_000,
                task="rework src",
            ),
            write(shared, "shared = 'mcp'\n"),
            text("done"),
        ]
    }
    run = claude.run(repo, script, "TASK-MCP: rework src")
    assert run.returncode == 0, run.describe()
    (locked,) = run.results("mcp__tenure__acquire_lock")
    assert not locked.is_error and '"token"' in locked.content, run.describe()
    (wrote,) = run.results("Write")
    assert not wrote.is_error and "successfully" in wrote.content, run.describe()
    assert shared.read_text() == "shared = 'mcp'\n"
