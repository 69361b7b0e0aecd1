"""A real tenure server (uvicorn on a free loopback port, in a thread) on each backend.

- ``live_server``: a running :class:`LiveServer` on the test's database (``store_url``), with
  uvicorn set up as ``tenure serve`` sets it up (:func:`tenure.server.run.config`), with an
  admin principal ``root`` (``live_server.admin_token``) and ``live_server.token_for(name,
  kind="agent", roles=(), parent=None)`` to add more principals directly on the database.
  ``live_server.stop()`` and ``live_server.start()`` stop and restart it on the same port and
  database (for outage tests).
- ``shell``: ``shell("jo", kind=..., roles=..., parent=...)`` is the ``tenure`` command run as
  a subprocess by that principal against ``live_server`` (see ``procs.Shell``); with
  ``inproc=True`` run in the test's process instead (``procs.cli_inproc``).
- ``pg``: a :class:`PostgresStore` on the test's database with the database's own clock (for
  tests parametrized with ``backend="postgres"``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

import tenure
from procs import Shell, free_port
from tenure.compose import create_app
from tenure.server.run import config as server_config
from tenure.service.principals import Principals
from tenure.settings import Settings
from tenure.store.postgres.store import PostgresStore


class LiveServer:
    def __init__(
        self, db: str, settings: Settings | None = None, *, access_log: bool = False
    ) -> None:
        """``access_log``: as ``tenure serve --access-log`` (the hot calls go through ASGI)."""
        self.db = db
        self.access_log = access_log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.settings = settings or Settings(db=db, port=self.port)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.admin_token = self.token_for("root", kind="human", roles=("admin",))

    def token_for(
        self, name: str, kind: str = "agent", roles: tuple[str, ...] = (), parent: str | None = None
    ) -> str:
        store = tenure.open_store(self.db)
        try:
            return Principals(store).bootstrap(name, kind, roles, parent).token
        finally:
            store.close()

    def start(self) -> LiveServer:
        app = create_app(self.settings)
        config = server_config(
            app,
            "127.0.0.1",
            self.port,
            access_log=self.access_log,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(30)
            self._server = self._thread = None

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture
def pg(make_store: Callable[..., tenure.Store]) -> PostgresStore:
    store = make_store(clock=None)
    assert isinstance(store, PostgresStore)
    return store


@pytest.fixture
def live_server(store_url: str) -> Iterator[LiveServer]:
    server = LiveServer(store_url).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def shell(live_server: LiveServer, tmp_path: Path) -> Callable[..., Shell]:
    """``shell(name, kind=, roles=, parent=, inproc=False)``: the ``tenure`` command as that
    principal, against ``live_server``, with its own config and state directories; a subprocess
    per call, or with ``inproc`` the CLI's entry function run in this process (``procs.cli_inproc``,
    for tests that call it dozens of times)."""

    def make(
        name: str,
        kind: str = "human",
        roles: tuple[str, ...] = (),
        parent: str | None = None,
        inproc: bool = False,
    ) -> Shell:
        token = live_server.token_for(name, kind, roles, parent)
        home = tmp_path / "homes" / name.replace("/", "_")
        return Shell(live_server.url, token, home, inproc=inproc)

    return make
