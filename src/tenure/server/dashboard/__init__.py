"""The web dashboard: ``GET /`` is the page, ``/dashboard/…`` its static files.

Hand-written HTML, CSS and JavaScript modules shipped as package data: nothing is built at install
time and nothing is vendored. Everything the page shows comes from the public REST API, called by
the browser with the user's own bearer token (kept in ``sessionStorage``, never in a URL); this
module serves files, and the one route that trades a sign-in link's one-time code for a token
(:mod:`tenure.server.dashboard.signin`). See ``docs/dashboard.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

from tenure.server.dashboard.signin import add_signin_route

STATIC = Path(__file__).with_name("static")

# The page runs only its own scripts and talks only to its own origin: an injected string can
# never run as code next to the token.
CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class _Static(StaticFiles):
    """Static files that the browser revalidates (ETag) so an upgrade never mixes versions."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(HEADERS)
        return response


def install(app: FastAPI) -> None:
    """Serve the dashboard page at ``/`` and its files under ``/dashboard/``."""
    page = (STATIC / "index.html").read_text(encoding="utf-8")

    @app.get("/", include_in_schema=False)
    def dashboard() -> HTMLResponse:
        return HTMLResponse(page, headers=HEADERS)

    app.mount("/dashboard", _Static(directory=STATIC), name="dashboard")
    add_signin_route(app)
