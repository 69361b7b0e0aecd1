"""``tenure.fence.TokenFence`` guarding a real HTTP service, with tokens from a real server."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request

import tenure
from procs import free_port
from tenure.fence import (
    ConnectedFence,
    KeyFence,
    MemoryFence,
    TokenFence,
    headers,
    key_from_header,
)

KEY = "reports/nightly"
pytestmark = pytest.mark.filterwarnings("ignore:tenure.fence. this guard uses a MemoryFence")


class Reports:
    """The user's own service: an ASGI app that records every write it accepts."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["method"] != "GET":
            self.writes.append((body.decode(), scope.get("state", {}).get("tenure_fence")))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


class Guarded:
    """``Reports`` behind ``TokenFence``, served by uvicorn on a loopback port."""

    def __init__(self, fence: KeyFence, inner: Any = None, **options: Any) -> None:
        self.reports = Reports()
        self.url = f"http://127.0.0.1:{free_port()}"
        options.setdefault("key", key_from_header)  # the header is opt-in
        app = TokenFence(inner or self.reports, fence=fence, **options)
        port = int(self.url.rsplit(":", 1)[1])
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "no server"
            time.sleep(0.02)
        self.http = httpx.Client(base_url=self.url, timeout=10)

    def post(self, body: str, hdrs: dict[str, str] | None = None) -> httpx.Response:
        return self.http.post("/reports/nightly", content=body, headers=hdrs or {})

    def stop(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def guarded() -> Iterator[Guarded]:
    service = Guarded(MemoryFence())
    yield service
    service.stop()


def problem(response: httpx.Response) -> tenure.TenureError:
    assert response.headers["content-type"] == "application/problem+json"
    return tenure.TenureError.from_problem(response.json())


def test_stale_header_is_refused_after_a_takeover(live_server: Any, guarded: Guarded) -> None:
    a = tenure.Client(live_server.url, token=live_server.token_for("worker-a"))
    b = tenure.Client(live_server.url, token=live_server.token_for("worker-b"))
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    old = a.acquire(KEY, ttl_ms=30_000)
    assert guarded.post("by a", headers(KEY, old.token)).status_code == 200

    admin.force_release(KEY, reason="worker-a is stuck")
    new = b.acquire(KEY, ttl_ms=30_000)
    assert guarded.post("by b", headers(KEY, new.token)).status_code == 200

    late = guarded.post("by a, late", headers(KEY, old.token))
    assert late.status_code == 409
    error = problem(late)
    assert isinstance(error, tenure.StaleToken)
    assert (error.token, error.current_token, error.key) == (old.token, new.token, KEY)
    assert guarded.reports.writes == [("by a", (KEY, old.token)), ("by b", (KEY, new.token))]


@pytest.mark.parametrize(
    ("hdrs", "field"),
    [
        ({}, "Tenure-Token"),
        ({"Tenure-Key": KEY}, "Tenure-Token"),
        ({"Tenure-Token": "7"}, "Tenure-Key"),
        ({"Tenure-Key": KEY, "Tenure-Token": "seven"}, "Tenure-Token"),
        ({"Tenure-Key": KEY, "Tenure-Token": "-7"}, "Tenure-Token"),
        ({"Tenure-Key": KEY, "Tenure-Token": "0"}, "Tenure-Token"),
        ({"Tenure-Key": KEY, "Tenure-Token": str(2**63)}, "Tenure-Token"),
        ({"Tenure-Key": "", "Tenure-Token": "7"}, "key"),
    ],
)
def test_bad_or_missing_headers_are_refused_and_change_nothing(
    guarded: Guarded, hdrs: dict[str, str], field: str
) -> None:
    assert guarded.post("first", headers(KEY, 5)).status_code == 200
    response = guarded.post("bad", hdrs)
    assert response.status_code == 422
    error = problem(response)
    assert isinstance(error, tenure.InvalidRequest) and error.field == field
    assert guarded.reports.writes == [("first", (KEY, 5))]
    assert guarded.post("second", headers(KEY, 5)).status_code == 200  # 5 is still current


def test_reads_pass_without_a_token(guarded: Guarded) -> None:
    assert guarded.http.get("/reports/nightly").status_code == 200
    assert guarded.reports.writes == []


def test_optional_mode_and_key_function() -> None:
    service = Guarded(MemoryFence(), required=False, key=lambda scope: scope["path"].strip("/"))
    try:
        assert service.post("untokened").status_code == 200
        assert service.post("t9", headers(KEY, 9)).status_code == 200
        assert service.post("t8", headers(KEY, 8)).status_code == 409
        assert service.reports.writes == [("untokened", None), ("t9", ("reports/nightly", 9))]
    finally:
        service.stop()


def test_connected_fence_survives_a_restart_of_the_service(tmp_path: Path) -> None:
    path = tmp_path / "fence.sqlite"
    fence = ConnectedFence(lambda: sqlite3.connect(path))
    fence.install()
    first = Guarded(fence)
    try:
        assert first.post("t4", headers(KEY, 4)).status_code == 200
    finally:
        first.stop()
    second = Guarded(ConnectedFence(lambda: sqlite3.connect(path)))
    try:
        response = second.post("t3", headers(KEY, 3))
        assert response.status_code == 409 and problem(response).current_token == 4  # type: ignore[attr-defined]
        assert second.post("t4 again", headers(KEY, 4)).status_code == 200
    finally:
        second.stop()


def test_fastapi_app_sees_the_admitted_token(live_server: Any) -> None:
    """The docs' example: a FastAPI route reads ``request.state.tenure_fence``."""
    app = FastAPI()
    seen: list[tuple[str, int]] = []

    @app.put("/reports/{name}")
    async def put_report(name: str, request: Request) -> dict[str, str]:
        seen.append(request.state.tenure_fence)
        return {"stored": name}

    service = Guarded(MemoryFence(), inner=app)
    client = tenure.Client(live_server.url, token=live_server.token_for("cron"))
    try:
        with client.lease(KEY, ttl=30, task="cron:nightly") as lease:
            reply = service.http.put(
                "/reports/nightly", json={"rows": 1}, headers=headers(lease.key, lease.token)
            )
            assert reply.json() == {"stored": "nightly"}
            assert seen == [(KEY, lease.token)]
            assert service.http.put("/reports/nightly", json={}).status_code == 422
            assert len(seen) == 1
    finally:
        service.stop()
