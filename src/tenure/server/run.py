"""Run the app on uvicorn, with a graceful shutdown that also ends long-polls.

On SIGTERM or SIGINT the server stops accepting connections, every long-poll makes a last attempt
and returns (instead of at the end of its ``wait_ms``), in-flight requests finish (for at most
``timeout_graceful_shutdown`` seconds), and :func:`serve` returns: SIGTERM is the ordinary way
to stop a service, so the process then exits 0.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI

from tenure.server.app import create_app
from tenure.settings import Settings
from tenure.store.open import open_store


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        tenure = getattr(self.app.state, "tenure", None)
        if tenure is not None:
            tenure.waiters.close()
            tenure.bell.close()
        super().handle_exit(sig, frame)


def _stopped(sig: int, frame: FrameType | None) -> None:
    """uvicorn re-raises the signal it stopped on once it is done; SIGTERM then ends quietly."""


def first_run_hint(settings: Settings) -> str | None:
    """How to get a token, when the database has no principal yet."""
    store = open_store(settings.db)
    try:
        if store.list_principals():
            return None
    finally:
        store.close()
    return (
        "no principals yet. Create an admin and get its token (shown once) with:\n"
        f"  tenure principal add $USER --kind human --role admin --db '{settings.db}'\n"
        "then: export TENURE_TOKEN=<that token>"
    )


def serve(
    settings: Settings, log_level: str = "info", *, access_log: bool = False, **options: Any
) -> None:
    """``access_log``: a line per request on stderr (off by default: at thousands of requests
    a second it costs a tenth of the server's CPU; ``/metrics`` counts requests by route)."""
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=30,
        lifespan="on",
        **options,
    )
    server = _Server(config, app)
    print(f"tenure {settings.db} on http://{settings.host}:{settings.port}", file=sys.stderr)
    hint = first_run_hint(settings)
    if hint:
        print(hint, file=sys.stderr)
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not server.started:
        raise SystemExit(1)  # could not bind, or the startup (opening the database) failed
