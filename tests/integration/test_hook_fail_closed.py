"""The HTTP hook fails closed: whatever goes wrong with an edit's hook request, the server
answers ``200`` with Claude Code's deny (a non-2xx reply would be a non-blocking error, and
the edit would go ahead), naming what is wrong and how to fix it. Heartbeats and ends keep
their honest statuses. Over a real server, with the real middleware (authentication, the
body limits, the rate limiter, the body timeout, the error handlers).

The hook route reads only what the decision needs: a 5 MiB ``Write`` gets its decision (the
ordinary body limit is 2 MiB); a body over the hook route's own cap is a deny naming it.
"""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _hooks import SESSION_A, event, make_repo

import tenure
from tenure.service import hooks as service_hooks
from tenure.service.principals import TOKEN_RE
from tenure.settings import AuthSettings, HttpSettings, Settings

ROUTE = "/v1/hooks/claude-code"
KEY = "files/github.com/acme/shop/src/app.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "shop")


@pytest.fixture
def serve(store_url: str) -> Iterator[Any]:
    """``serve(**settings)``: a live server on the test's database with those settings."""
    from conftest import LiveServer

    started: list[LiveServer] = []

    def start(db: str = store_url, **options: Any) -> LiveServer:
        server = LiveServer(db, Settings(db=db, **options))
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()


def post(url: str, body: bytes | str, authorization: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    with httpx.Client(base_url=url, timeout=60) as http:
        return http.post(ROUTE, content=body, headers=headers)


def denied(resp: httpx.Response) -> str:
    """The deny's reason; fails unless the reply is a 200 deny."""
    assert resp.status_code == 200, resp.text
    out = resp.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and out["hookEventName"] == "PreToolUse"
    reason = str(out["permissionDecisionReason"])
    assert reason.startswith("tenure could not check this edit (")
    assert reason.endswith("The edit is blocked until this is fixed: tell the user.")
    return reason


def edit(repo: Path, content: str | None = None) -> str:
    ev = event("a_pre_edit", repo)
    if content is not None:
        ev = event("a_pre_write", repo, tool_input={"file_path": str(repo / "src/app.py"),
                                                     "content": content})  # fmt: skip
    return json.dumps(ev)


@pytest.mark.parametrize("authorization", [None, "Bearer", ""])  # "Bearer $UNSET", trimmed
def test_an_edit_without_a_token_is_a_200_deny_saying_how_to_set_one(
    serve: Any, repo: Path, authorization: str | None
) -> None:
    server = serve()
    reason = denied(post(server.url, edit(repo), authorization))
    assert "(unauthenticated: " in reason and "No tenure token was sent" in reason
    assert "TENURE_TOKEN" in reason and "tenure agent doctor claude-code" in reason


def test_a_refused_or_revoked_token_is_a_200_deny(serve: Any, repo: Path) -> None:
    server = serve()
    reason = denied(post(server.url, edit(repo), "Bearer tnr_not_a_token"))
    assert "The token was refused" in reason
    jo = server.token_for("jo")
    token_id = TOKEN_RE.fullmatch(jo)[1]  # type: ignore[index]
    with tenure.Client(server.url, token=server.admin_token) as admin:
        admin.revoke_token("jo", token_id)
    reason = denied(post(server.url, edit(repo), f"Bearer {jo}"))
    assert "(unauthenticated: " in reason and "The token was refused" in reason


def test_a_heartbeat_or_end_without_a_token_keeps_its_honest_401(serve: Any, repo: Path) -> None:
    server = serve()
    for name in ("a_post_edit", "a_session_end", "b_pre_bash"):
        resp = post(server.url, json.dumps(event(name, repo)), None)
        assert resp.status_code == 401, (name, resp.text)
        assert resp.json()["code"] == "unauthenticated"
    with httpx.Client(base_url=server.url) as http:  # and the rest of the API is unchanged
        assert http.post("/v1/leases/acquire", json={"key": "k"}).status_code == 401


def test_a_5_mib_write_gets_its_decision_and_the_content_is_not_kept(
    serve: Any, repo: Path
) -> None:
    server = serve()
    jo = server.token_for("jo")
    big = "x" * (5 * 1024 * 1024)
    first = post(server.url, edit(repo, big), f"Bearer {jo}")
    assert first.status_code == 200 and first.json() == {}, first.text[:300]
    with tenure.Client(server.url, token=jo) as client:
        (lease,) = client.list_leases(prefix="files/")
    assert lease.key == KEY and lease.session == SESSION_A
    other = json.loads(edit(repo, big))
    other["session_id"] = "another-session"
    reason = post(server.url, json.dumps(other), f"Bearer {jo}").json()
    assert reason["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "lease_held: src/app.py" in reason["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_body_over_the_hook_cap_is_a_deny_naming_the_cap(serve: Any, repo: Path) -> None:
    server = serve(hook_max_body_bytes=64 * 1024)
    jo = server.token_for("jo")
    body = edit(repo, "y" * 100_000)
    reason = denied(post(server.url, body, f"Bearer {jo}"))
    assert "too_large" in reason and "hook limit of 65536 bytes" in reason
    assert "TENURE_HOOK_MAX_BODY_BYTES" in reason

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        data = body.encode()
        for at in range(0, len(data), 16_384):
            yield data[at : at + 16_384]

    with httpx.Client(base_url=server.url, timeout=60) as http:
        streamed = http.post(ROUTE, content=chunks(), headers={"Authorization": f"Bearer {jo}"})
    assert "hook limit of 65536 bytes" in denied(streamed)


def test_a_body_that_is_not_json_is_a_deny(serve: Any) -> None:
    server = serve()
    jo = server.token_for("jo")
    for body in ("{not json", b"\xff\xfe", "[1, 2]", '"PreToolUse"'):
        assert "invalid_request" in denied(post(server.url, body, f"Bearer {jo}"))


def test_rate_limiting_is_a_deny(serve: Any, repo: Path) -> None:
    server = serve(auth=AuthSettings(failures_per_s=0.01, failures_burst=1))
    post(server.url, edit(repo), "Bearer tnr_bad")  # the one failure the burst allows
    reason = denied(post(server.url, edit(repo), "Bearer tnr_bad"))
    assert "(rate_limited: " in reason and "Too many failed authentications" in reason


def test_a_crash_of_the_route_is_a_deny(
    serve: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve()
    jo = server.token_for("jo")

    def crash(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(service_hooks, "claude_code", crash)
    reason = denied(post(server.url, edit(repo), f"Bearer {jo}"))
    assert "(internal: " in reason and "boom" not in reason  # the traceback is for the log
    heartbeat = post(server.url, json.dumps(event("a_post_edit", repo)), f"Bearer {jo}")
    assert heartbeat.status_code == 500  # not an edit: the honest status


@pytest.mark.parametrize("backend", ["sqlite"])  # a SQLite file removed under the server
def test_the_database_gone_is_a_deny(serve: Any, repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "data" / "tenure.db"
    server = serve(f"sqlite:///{path}")
    jo = server.token_for("jo")
    assert post(server.url, edit(repo), f"Bearer {jo}").json() == {}
    shutil.rmtree(path.parent)
    other = json.loads(edit(repo))
    other["session_id"] = "another-session"
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for _ in range(100):  # the watch finds it within a second
            resp = http.post(ROUTE, json=other, headers={"Authorization": f"Bearer {jo}"})
            text = resp.json()["hookSpecificOutput"]["permissionDecisionReason"]
            if "unavailable" in text:
                break
            http.get("/readyz")
    reason = denied(resp)
    assert "(unavailable: " in reason and "database cannot be reached" in reason


def test_a_body_that_does_not_arrive_in_time_is_a_deny(serve: Any) -> None:
    server = serve(http=HttpSettings(body_timeout_ms=300))
    head = (
        f"POST {ROUTE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        'Content-Length: 1000\r\nAuthorization: Bearer x\r\n\r\n{"hook_event'
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head.encode())
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    status, _, rest = got.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 200"), got
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    reason = body["hookSpecificOutput"]["permissionDecisionReason"]
    assert "request_timeout" in reason and "TENURE_BODY_TIMEOUT_MS" in reason
