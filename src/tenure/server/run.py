"""Run the app on uvicorn, with a graceful shutdown that also ends long-polls."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI

from tenure.server.app import create_app
from tenure.settings import Settings


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # In-flight requests finish; long-polls return now instead of at the end of their wait.
        tenure = getattr(self.app.state, "tenure", None)
        if tenure is not None:
            tenure.waiters.close()
        super().handle_exit(sig, frame)


def serve(settings: Settings, log_level: str = "info", **options: Any) -> None:
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        timeout_graceful_shutdown=30,
        lifespan="on",
        **options,
    )
    server = _Server(config, app)
    print(f"tenure {settings.db} on http://{settings.host}:{settings.port}", file=sys.stderr)
    server.run()
