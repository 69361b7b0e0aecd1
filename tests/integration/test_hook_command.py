"""The command hook's own failures (``tenure.hooks.command.main``, in this process): every one
blocks an edit (exit 2, the reason on stderr, a ``deny`` on stdout) and lets a heartbeat or an
end through (exit 0); ``TENURE_URL`` failover lists; how long each kind of event waits."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tenure.hooks import command, http

DOWN = "http://127.0.0.1:9"


def event(cwd: Path, name: str = "PreToolUse") -> bytes:
    return json.dumps(
        {
            "session_id": "s-1",
            "cwd": str(cwd),
            "hook_event_name": name,
            "tool_name": "Edit",
            "tool_input": {"file_path": str(cwd / "app.py"), "old_string": "a", "new_string": "b"},
        }
    ).encode()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in ("TENURE_URL", "TENURE_TOKEN", "TENURE_HOOK_TIMEOUT_MS", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TENURE_CONFIG_DIR", str(tmp_path / "config"))
    return monkeypatch


def hook(body: bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = command.main(["claude-code"], io.BytesIO(body))
    out, err = capsys.readouterr()
    return code, out, err


def blocked(
    body: bytes, capsys: pytest.CaptureFixture[str], *, edit: bool = True
) -> tuple[str, str]:
    """Run the hook on the edit ``body`` (and on it as a heartbeat): the edit blocked, the
    heartbeat let through; the edit's reason and the heartbeat's stderr."""
    code, out, err = hook(body, capsys)
    assert code == 2, (out, err)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] == err.strip()
    beat = json.loads(body) | {"hook_event_name": "PostToolUse"}
    code, out, said = hook(json.dumps(beat).encode(), capsys)
    assert (code, out.strip()) == (0, "{}"), said
    return err.strip(), said


@pytest.mark.parametrize("url", ["127.0.0.1:7676", "http://", "http://h:port", "ftp://h"])
def test_a_tenure_url_that_is_no_url(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    env.setenv("TENURE_URL", url)
    env.setenv("TENURE_TOKEN", "tnr_x")
    reason, said = blocked(event(tmp_path), capsys)
    assert reason.startswith("tenure_hook_failed: tenure cannot check this edit")
    assert f"TENURE_URL {url!r} is not a server URL" in reason
    assert "Fix: set TENURE_URL to http://HOST:PORT" in reason
    assert "is not a server URL" in said


@pytest.mark.parametrize("content", [None, "{not json", "[1]"])
def test_a_login_file_that_cannot_be_read(
    env: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
) -> None:
    login = tmp_path / "config" / "login.json"
    login.parent.mkdir()
    if content is None:
        login.mkdir()  # there, but no file to read
    else:
        login.write_text(content)
    reason, _ = blocked(event(tmp_path), capsys)
    assert f"the login file {login} " in reason and "tenure login" in reason


def test_a_bug_in_the_hook_blocks_an_edit_and_nothing_else(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("surprise")

    env.setenv("TENURE_URL", DOWN)
    env.setattr(command, "where", broken)  # edits only
    env.setattr(http, "post", broken)  # every event
    reason, said = blocked(event(tmp_path), capsys)
    assert reason.startswith("tenure_hook_failed: tenure cannot check this edit, so it is")
    assert "tenure's hook failed (KeyError: 'surprise' at " in reason
    assert "KeyError: 'surprise'" in said


def test_a_failover_list_asks_the_servers_in_turn(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], live_server: Any
) -> None:
    env.setenv("TENURE_URL", f"{DOWN}, {live_server.url}/")
    env.setenv("TENURE_TOKEN", live_server.token_for("jo", kind="agent"))
    code, out, err = hook(event(tmp_path), capsys)
    assert (code, json.loads(out)) == (0, {}), err  # the second server took the lease
    other = json.loads(event(tmp_path)) | {"session_id": "s-2"}
    code, _, err = hook(json.dumps(other).encode(), capsys)
    assert code == 2 and err.startswith("lease_held: app.py is being edited elsewhere")
    env.setenv("TENURE_URL", f"{DOWN},http://127.0.0.1:1")
    reason, _ = blocked(event(tmp_path), capsys)
    assert reason.startswith(f"tenure_unreachable: tenure at {DOWN}, http://127.0.0.1:1 could")
    assert f"{DOWN}: ConnectionRefusedError" in reason


@pytest.fixture
def silent() -> Iterator[str]:
    """A server that takes connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_how_long_each_event_waits(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], silent: str
) -> None:
    waits: list[float] = []
    real = http.post

    def post(*args: Any) -> Any:
        waits.append(args[-1])
        return real(*args)

    env.setattr(http, "post", post)
    env.setenv("TENURE_URL", silent)
    env.setenv("TENURE_TOKEN", "tnr_x")
    env.setenv("TENURE_HOOK_TIMEOUT_MS", "300")
    reason, said = blocked(event(tmp_path), capsys)
    assert "TimeoutError" in reason and "TimeoutError" in said
    assert waits == [pytest.approx(0.3, abs=0.01), pytest.approx(command.OTHER_TIMEOUT_S, abs=0.1)]
    assert command.OTHER_TIMEOUT_S <= 1.5 and command.MAX_TIMEOUT_MS <= 45_000
    env.delenv("TENURE_HOOK_TIMEOUT_MS")
    assert command.timeout_s({}) == 10.0
    for bad in ("0", "ten", "-5", "45001"):
        env.setenv("TENURE_HOOK_TIMEOUT_MS", bad)
        reason, _ = blocked(event(tmp_path), capsys)
        assert f"TENURE_HOOK_TIMEOUT_MS={bad!r} is not a number of milliseconds" in reason


def test_stdin_that_is_no_event_is_blocked(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for body, says in ((b"\xff", "is not JSON"), (b"[1]", "must be a JSON object")):
        code, _, err = hook(body, capsys)
        assert code == 2 and says in err


def test_a_reply_that_is_no_decision_blocks_the_edit(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = threading.Event()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)

        def serve() -> None:
            for reply in (b"HTTP/1.1 200 OK\r\n\r\n[1, 2]", b"SSH-2.0-OpenSSH\r\n"):
                conn, _ = sock.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(reply)
            done.set()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        env.setenv("TENURE_URL", f"http://127.0.0.1:{sock.getsockname()[1]}")
        code, _, err = hook(event(tmp_path), capsys)
        assert code == 2 and "could not check this edit (HTTP 200)" in err
        code, _, err = hook(event(tmp_path), capsys)
        assert code == 2 and "NotHttp: not an HTTP reply: 'SSH-2.0-OpenSSH'" in err
        thread.join(10)
    assert done.is_set()


def test_an_edit_waits_for_all_its_servers_within_one_bound(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], silent: str
) -> None:
    """Claude Code kills a hook that runs past its timeout and lets the edit through: the tries
    of a failover list share one bound, well under it."""
    waits: list[float] = []
    real = http.post

    def post(*args: Any) -> Any:
        waits.append(args[-1])
        return real(*args)

    env.setattr(http, "post", post)
    env.setattr(command, "MAX_TIMEOUT_MS", 500)
    env.setenv("TENURE_URL", f"{silent},{silent}/x,{silent}/y")
    env.setenv("TENURE_TOKEN", "tnr_x")
    env.setenv("TENURE_HOOK_TIMEOUT_MS", "300")
    code, _, err = hook(event(tmp_path), capsys)
    assert code == 2 and "not tried (no time left)" in err
    assert waits[0] == 0.3 and 0 < waits[1] < 0.3 and len(waits) == 2
