"""The real Claude Code binary (``@anthropic-ai/claude-code``, the version pinned in
``_claude_code.VERSION``) with tenure's hooks, as ``tenure agent setup claude-code`` writes
them, against a real tenure server. The model is a scripted stand-in on loopback
(``_model_api``) that plays fixed tool calls; the tests assert on what the binary did (the
files, the leases, the events) and on what the model was told (the ``tool_result`` blocks).

Every setup that the docs or ``tenure agent setup`` lead to must block an edit of a held file:
a second session's ``Write``, a session started without ``tenure`` on its ``PATH``, an HTTP hook
without a token, a sibling subagent, a path through a symlink; a ``Bash`` append to a held file
cannot be prevented and must be reported (to the model, and as an ``unleased_edit`` event).

SQLite only (``backend`` pinned below): these test the hooks as the harness runs them; the
routes they call are proven on both backends by the contract and server suites. The tier runs
in ``./dev test`` (which installs the binary); ``-m claude_code`` selects it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _claude_code import ClaudeCode, setup_repo
from _model_api import text, tool

import tenure

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
def repo(tmp_path: Path, live_server: Any) -> Path:
    return setup_repo(tmp_path / "shop", live_server.url)


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
