"""Every error leaves the server as ``application/problem+json`` with a stable ``code``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure.errors import InvalidRequest, NotFound, TenureError, TooLarge
from tenure.store.errors import DRIVER_ERRORS, failure
from tenure.store.health import first_line

PROBLEM = "application/problem+json"
RETRY_AFTER_S = 1  # what a 503 asks callers to wait before trying again
log = logging.getLogger(__name__)
STATUS_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "lease_held",
    413: "too_large",
    422: "invalid_request",
}


def problem_response(
    err: TenureError, status: int | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = err.to_problem()
    if status is not None:
        body["status"] = status
    return JSONResponse(body, status_code=body["status"], media_type=PROBLEM, headers=headers)


def _field(loc: tuple[Any, ...]) -> str:
    """``follow_ups[1].title`` for the location ``("body", "follow_ups", 1, "title")``."""
    out = ""
    for part in loc:
        if part in ("body", "query", "path", "header"):
            continue
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out or "body"


def challenge(request: Request) -> dict[str, str]:
    """The ``WWW-Authenticate`` header of a 401 (RFC 6750: name a rejected token)."""
    if request.headers.get("authorization", "").lower().startswith("bearer "):
        return {"WWW-Authenticate": 'Bearer realm="tenure", error="invalid_token"'}
    return {"WWW-Authenticate": 'Bearer realm="tenure"'}


async def on_tenure_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TenureError)
    return problem_response(exc, headers=error_headers(exc, request.headers.get("authorization")))


def error_headers(exc: TenureError, authorization: str | None) -> dict[str, str] | None:
    """The headers of ``exc``'s reply: a 401's challenge (naming a rejected bearer token), a
    429's or 503's ``Retry-After`` (its ``retry_after_s``, else a second)."""
    if exc.status == 401:
        rejected = (authorization or "").lower().startswith("bearer ")
        return {"WWW-Authenticate": CHALLENGES[rejected]}
    if exc.status in (429, 503):
        return {"Retry-After": str(getattr(exc, "retry_after_s", None) or RETRY_AFTER_S)}
    return None


CHALLENGES = {True: 'Bearer realm="tenure", error="invalid_token"', False: 'Bearer realm="tenure"'}


async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid", "type": ""}
    kind, loc = first.get("type"), tuple(first.get("loc", ()))
    if kind == "json_invalid":
        ctx = first.get("ctx")
        why = str(ctx.get("error", "")) if isinstance(ctx, dict) else ""
        err = InvalidRequest(f"the body is not valid JSON: {why}".rstrip(": "), field="body")
        return problem_response(err, status=400)
    if loc == ("body",) and kind in ("missing", "model_attributes_type", "dict_type"):
        what = "missing" if kind == "missing" else "not a JSON object"
        err = InvalidRequest(f"the body is {what}: send a JSON object", field="body")
        return problem_response(err, status=400)
    field = _field(tuple(first.get("loc", ())))
    if first.get("type") == "extra_forbidden":
        detail = f"{field}: unknown field"
    else:
        detail = f"{field}: {first.get('msg', 'invalid')}"
    return problem_response(InvalidRequest(detail, field=field))


async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if isinstance(exc, _TooBig):
        return problem_response(exc.error)
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        return problem_response(NotFound("no such route", what="route"), headers=headers)
    if exc.status_code == 400:  # FastAPI could not read the body (say, it is not UTF-8)
        err = InvalidRequest(f"the body cannot be read: {exc.detail}", field="body")
        return problem_response(err, status=400, headers=headers)
    detail = str(exc.detail)
    if exc.status_code == 405:
        headers["Allow"] = allowed_methods(request) or headers.get("Allow", "")
        detail = f"{request.method} is not allowed here; allowed: {headers.get('Allow', 'none')}"
    body = {
        "type": f"https://tenure.dev/problems/{STATUS_CODES.get(exc.status_code, 'error')}",
        "title": str(exc.detail),
        "status": exc.status_code,
        "code": STATUS_CODES.get(exc.status_code, "error"),
        "detail": detail,
    }
    return JSONResponse(body, exc.status_code, media_type=PROBLEM, headers=headers)


def allowed_methods(request: Request) -> str:
    """The methods of the path that refused the request, over all its routes.

    Starlette names only the methods of the first route that matched the path; a path served
    by several routes (``GET`` and ``PATCH /v1/items/{id}``) has them all.
    """
    routes = [r for r in request.app.router.routes if r.matches(request.scope)[0] is Match.PARTIAL]
    if not routes:
        return ""
    path = getattr(routes[0], "path", None)
    methods: set[str] = set()
    for route in routes:
        if getattr(route, "path", None) == path:
            methods.update(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def refuse_other_method(request: Request) -> None:
    """``405`` (with ``Allow``) when a route of another path template and other methods serves
    exactly this path: a GET of ``/v1/leases/acquire`` also matches the GET of a key, whose
    lookup then found nothing. (Other methods of the template that matched do not count.)"""
    matched = getattr(request.scope.get("route"), "path", None)
    others = [
        r
        for r in request.app.router.routes
        if getattr(r, "path", None) != matched and r.matches(request.scope)[0] is Match.PARTIAL
    ]
    if others:
        raise StarletteHTTPException(405)


def unavailable(detail: str) -> JSONResponse:
    """``503 unavailable``: the server runs but cannot serve (its database is gone)."""
    body = {
        "type": "https://tenure.dev/problems/unavailable",
        "title": "not ready",
        "status": 503,
        "code": "unavailable",
        "detail": detail,
    }
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    return JSONResponse(body, 503, media_type=PROBLEM, headers=headers)


def database_down(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached or used now, rather than a bug."""
    found = failure(exc)
    return found is not None and found.down


async def on_database_error(request: Request, exc: Exception) -> JSONResponse:
    """``503 unavailable`` with ``Retry-After`` while the database is down; other driver errors
    are bugs (``500``)."""
    if not database_down(exc):
        log.error("database error", exc_info=exc)
        return await on_crash(request, exc)
    log.warning("database unavailable: %s: %s", type(exc).__name__, exc)
    return unavailable(f"the database cannot be reached ({first_line(exc)}); try again")


async def on_crash(request: Request, exc: Exception) -> JSONResponse:
    """A bug: still a problem document (the traceback goes to the log, not to the caller)."""
    body = {
        "type": "https://tenure.dev/problems/internal",
        "title": "internal error",
        "status": 500,
        "code": "internal",
        "detail": "the server failed; the error is in its log",
    }
    return JSONResponse(body, 500, media_type=PROBLEM)


def install(app: FastAPI) -> None:
    app.add_exception_handler(Exception, on_crash)
    for kind in DRIVER_ERRORS:
        app.add_exception_handler(kind, on_database_error)
    app.add_exception_handler(TenureError, on_tenure_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with ``413 too_large`` before parsing."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await self._refuse(scope, receive, send, int(length))
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooBig(self.error(seen))
            return message

        await self.app(scope, limited, send)

    def error(self, size: int) -> TooLarge:
        return TooLarge(
            f"the body is {size} bytes or more, more than {self.limit}",
            field="body",
            limit=self.limit,
            size=size,
        )

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: int) -> None:
        await problem_response(self.error(size))(scope, receive, send)


class _TooBig(StarletteHTTPException):
    """Raised while a body without ``Content-Length`` streams in; the handler renders it."""

    def __init__(self, error: TooLarge) -> None:
        super().__init__(413, error.detail)
        self.error = error


class JsonByDefault:
    """Read request bodies as JSON unless they say otherwise (``curl -d`` says form data)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            kind = dict(scope["headers"]).get(b"content-type", b"")
            if not kind or kind.startswith(b"application/x-www-form-urlencoded"):
                kind = b"application/json"
            scope = {**scope, "headers": [*headers, (b"content-type", kind)]}
        await self.app(scope, receive, send)
