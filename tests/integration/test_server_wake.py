"""The server wakes long-polls from the commit itself, not from the route that made it.

A waiter on key ``K`` is woken when ``K`` frees, whichever path freed it: here the server's own
service, called directly (as the reaper, an MCP tool or any in-process caller does), with no
route and so no hand-placed wake-up. Without the wake-up the waiter sleeps until its wait ends
(a minute; the holder's lease lasts longer still) and only then tries again: its reply does not
come within :data:`WOKEN_S`, a bound far above a wake-up's milliseconds and far below the wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import uvicorn

import tenure
from procs import free_port
from tenure.server import create_app
from tenure.server.http.app import TenureApp
from tenure.server.run import config as server_config
from tenure.service.leases import Service
from tenure.service.principals import Principals
from tenure.settings import Settings

HOLD_MS = 120_000  # the holder's lease: far longer than any wait below
WAIT_MS = 60_000
WOKEN_S = 15  # a woken waiter replies long before this; a sleeping one long after


class Server:
    """A real server in a thread, with its app at hand (for its in-process service)."""

    def __init__(self, db: str) -> None:
        self.port = free_port()
        self.app: TenureApp = create_app(Settings(db=db, port=self.port))
        config = server_config(self.app, "127.0.0.1", self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "no server"
            time.sleep(0.02)
        store = tenure.open_store(db)
        try:
            self.bob = Principals(store).bootstrap("bob", "agent", (), None).token
        finally:
            store.close()

    @property
    def service(self) -> Service:
        assert self.app.tenure is not None
        return self.app.tenure.service

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def acquire(self, key: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.bob}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=90) as client:
            body: dict[str, Any] = {"key": key, "wait_ms": WAIT_MS}
            return client.post("/v1/leases/acquire", json=body, headers=headers)

    def wait_for_waiter(self, key: str) -> None:
        assert self.app.tenure is not None
        waiters = self.app.tenure.waiters
        deadline = time.monotonic() + 10
        while waiters.waiting(key) == 0:
            assert time.monotonic() < deadline, "the waiter never queued"
            time.sleep(0.01)


@pytest.fixture
def server(store_url: str) -> Iterator[Server]:
    running = Server(store_url)
    try:
        yield running
    finally:
        running.stop()


def test_a_release_by_the_service_itself_wakes_the_waiter(server: Server) -> None:
    held = server.service.acquire("alice", "k", ttl_ms=HOLD_MS)
    with ThreadPoolExecutor(1) as pool:
        waiter = pool.submit(server.acquire, "k")
        server.wait_for_waiter("k")
        assert server.service.release("alice", "k", held.token).released
        reply = waiter.result(WOKEN_S)
    assert reply.status_code == 200, reply.text
    assert reply.json()["lease"]["holder"] == "bob"
    assert reply.json()["lease"]["token"] == held.token + 1


def test_a_force_release_by_the_service_itself_wakes_the_waiter(server: Server) -> None:
    server.service.acquire("alice", "k", ttl_ms=HOLD_MS)
    with ThreadPoolExecutor(1) as pool:
        waiter = pool.submit(server.acquire, "k")
        server.wait_for_waiter("k")
        root = tenure.Principal("root", "human", ("admin",))
        server.service.force_release(root, "k", "the holder hung")
        reply = waiter.result(WOKEN_S)
    assert reply.status_code == 200, reply.text
    assert reply.json()["lease"]["holder"] == "bob"
