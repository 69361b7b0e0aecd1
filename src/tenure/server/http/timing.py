"""Request latency by route template, for ``tenure_request_duration_seconds``.

Installed as the innermost middleware, so the router's match (``scope["route"]``) is visible
after the call. The label is the route's path template (``/v1/leases/{key:path}``), never the
path itself, so a key never becomes a label value.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure.metrics import Metrics


class Timing:
    def __init__(self, app: ASGIApp, metrics: Callable[[], Metrics]) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            labels = (("route", route), ("method", scope["method"]), ("code", _class(status[0])))
            self.metrics().observe(
                "tenure_request_duration_seconds", time.perf_counter() - started, labels
            )


def _class(status: int) -> str:
    return f"{status // 100}xx"
