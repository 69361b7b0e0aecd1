"""A lean path for the hot lease verbs: ``POST /v1/leases/acquire``, ``/renew``, ``/release``.

Through FastAPI a call costs about a millisecond of the event loop's CPU (middleware layers,
dependency resolution with two worker-thread hops, response validation), far more than the
database's share: with FastAPI alone (group commit still on) the cycle workload runs at 0.43x
the ops/s of this path on SQLite and 0.62x on PostgreSQL (measured with ``bench/trees.py``,
alternated rounds). This ASGI middleware serves the *ordinary* request of those three verbs
itself, from their entries in the verb table (:mod:`tenure.verbs.leases`): the body parsed with
the verb's own ``input`` model, authentication (:mod:`tenure.server.http.auth`, before the call
joins a group), the verb's ``run`` as one job of the server's executor (:func:`job`), its
``wire`` reply serialised once. ``tenure serve`` goes one step further for most of these
requests and serves them from uvicorn's protocol without ASGI (:mod:`tenure.server.protocol`),
with the same functions of this module; this middleware serves the rest (``--access-log``,
long-polls, a pipelined request). A long-poll whose client leaves is withdrawn
(:mod:`tenure.server.http.waiting`): nothing is sent, its duration is recorded as ``499``.

Everything else goes on to FastAPI unchanged, before any side effect: another route or method,
a query string, a body that is not small JSON, a body the model refuses, a missing token. So
every bad input still gets FastAPI's own 4xx problem response (the route parses with the same
model), and the OpenAPI document (the routes are still declared there) stays true. A token
that does not authenticate is refused here as FastAPI would (``401`` with its challenge, or
``429`` with ``Retry-After``), cheaply: a flood of them must not cost what a call costs.
Errors of the service itself (``lease_held``, ``lease_lost``, …, raised after the transaction)
are rendered by the app's own handlers in :mod:`tenure.server.http.problems`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure.core.models import Principal
from tenure.core.validate import bearer_token
from tenure.errors import InvalidRequest, TenureError
from tenure.server.http import problems
from tenure.server.http.deps import State, dumps
from tenure.server.http.waiting import CLIENT_GONE, wait_to_acquire
from tenure.server.runtime.departure import Withdrawn
from tenure.store.errors import failure
from tenure.verbs.fields import TRUSTED_PRINCIPAL
from tenure.verbs.leases import ACQUIRE, RELEASE, RENEW, AcquireIn, ReleaseIn, RenewIn
from tenure.verbs.table import Verb

log = logging.getLogger("tenure.server")
JSON_TYPE = b"application/json"
PROBLEM_TYPE = problems.PROBLEM.encode()
MAX_FAST_BODY = 64 * 1024  # larger bodies take the ordinary path (and its body limit)
#: a hot call's parsed body
HotIn = AcquireIn | RenewIn | ReleaseIn
#: the verbs served here, by path: their entries in the verb table
HOT: dict[str, Verb[Any, Any]] = {verb.path: verb for verb in (ACQUIRE, RENEW, RELEASE)}


class Fallback(Exception):
    """Let FastAPI serve this request (nothing was changed)."""


def parse(path: str, raw: bytes) -> HotIn | None:
    """The body parsed with the verb's own input model (what its route takes), else ``None``:
    FastAPI's route then answers it with its problem response. (1.1-1.3 µs a body; the
    hand-written field checks this replaced took 1.8-2.1 µs, with the same decisions.)"""
    try:
        body: HotIn = HOT[path].input.model_validate_json(raw)
        return body
    except ValidationError:
        return None


def bearer(scope: Scope) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (as ``bearer_token`` reads it)."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bearer_token(value.decode("latin-1"))
    return None


def json_body(scope: Scope) -> bool:
    """No content type or JSON (JsonByDefault reads a missing one as JSON)."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bool(value == b"application/json")
    return True


def content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def eligible(scope: Scope, limit: int) -> bool:
    """What the request line and headers allow: a POST to one of the three paths with no query
    string and a JSON body of a known length up to ``limit``."""
    length = content_length(scope)
    return (
        scope["path"] in HOT
        and scope["method"] == "POST"
        and not scope.get("query_string")
        and length is not None
        and length <= limit
        and json_body(scope)
    )


class HotPath:
    """Outermost ASGI layer (outside FastAPI's own middleware): see the module's docstring."""

    def __init__(self, app: ASGIApp, state: Callable[[], State | None], limit: int) -> None:
        self.app = app
        self.state = state
        self.limit = limit  # beyond: BodyLimit's 413 on the ordinary path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        st = self.state() if scope["type"] == "http" else None
        if st is None or not eligible(scope, self.limit):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        try:
            raw, receive = await _read(receive, content_length(scope) or 0)
        except InvalidRequest as err:  # more bytes than its Content-Length said: 400
            await _send_json(send, 400, dumps({**err.to_problem(), "status": 400}))
            return
        if raw is None:
            return  # the client went away
        started = time.perf_counter()
        body = parse(path, raw)
        token = bearer(scope)
        headers = None
        try:
            if body is None or (token is None and TRUSTED_PRINCIPAL not in scope):
                raise Fallback  # (FastAPI refuses a missing token with its challenge)
            if getattr(body, "slots", None) is not None:
                raise Fallback  # (a semaphore's acquisition runs outside the group commits)
            status, content = 200, await self._serve(st, path, token, body, scope, receive)
        except Withdrawn:  # the client of a long-poll left: nobody to answer
            status, content = CLIENT_GONE, None
        except Fallback:
            await self.app(scope, receive, send)
            return
        except TenureError as err:  # the service's refusal, or the token's (401, 429)
            status, content = err.status, dumps(err.to_problem())
            headers = problems.error_headers(err, f"Bearer {token}")
        except Exception as err:
            status, content = await render_error(err, path, scope, receive, send), None
        if content is not None:
            await _send_json(send, status, content, headers)
        observe(st, path, status, started)

    async def _serve(
        self, st: State, path: str, token: str | None, body: HotIn, scope: Scope, receive: Receive
    ) -> bytes:
        me = await st.auth.caller(scope, token)  # before the call joins a group
        call = job(st, path, me, body)
        if isinstance(body, AcquireIn) and body.wait_ms:  # a long-poll waits its turn in the
            attempt = lambda: st.executor.run(call, body.key)  # noqa: E731  (key's queue)
            return await wait_to_acquire(st, me, body.key, attempt, body.wait_ms, receive)
        return await st.executor.run(call, body.key)


def job(st: State, path: str, me: Principal, args: HotIn) -> Callable[[], bytes]:
    """The call of authenticated ``me`` as one job of the server's executor: the verb's
    ``run`` and its reply's JSON, written once."""
    verb, services = HOT[path], st.services

    def call() -> bytes:
        out = verb.wire(verb.run(services, me, args))  # the commit's listener wakes waiters
        # the generic encoder: the hand-written lease JSON it replaced was ~2 µs faster a
        # reply (~2 % of a call's server CPU), under the 5 % of ops/s that would keep it
        return out if isinstance(out, bytes) else dumps(out or {})

    return call


def _route_labels(path: str, status_class: int) -> tuple[tuple[str, str], ...]:
    return (("route", path), ("method", "POST"), ("code", f"{status_class}xx"))


_LABELS = {(path, n): _route_labels(path, n) for path in HOT for n in (2, 4, 5)}


def observe(st: State, path: str, status: int, started: float) -> None:
    """The request's duration, as the ``Timing`` middleware counts the other routes'."""
    labels = _LABELS.get((path, status // 100)) or _route_labels(path, status // 100)
    elapsed = time.perf_counter() - started
    st.service.metrics.observe("tenure_request_duration_seconds", elapsed, labels)


async def render_error(
    err: Exception, path: str, scope: Scope, receive: Receive, send: Send
) -> int:
    """Send the app's own problem response for ``err``: a database error (``503`` while it is
    down) or a bug (``500``, the traceback to the log). Its status."""
    if failure(err) is not None:
        return await _send(problems.on_database_error, err, scope, receive, send)
    log.error("%s failed", path, exc_info=err)
    return await _send(problems.on_crash, err, scope, receive, send)


async def _send(
    handler: Callable[[Request, Exception], Awaitable[Response]],
    err: Exception,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> int:
    """Render ``err`` with one of the app's own exception handlers; its status."""
    response = await handler(Request(scope), err)
    await response(scope, receive, send)
    return response.status_code


async def _send_json(
    send: Send, status: int, content: bytes, extra: dict[str, str] | None = None
) -> None:
    kind = PROBLEM_TYPE if status >= 400 else JSON_TYPE
    headers = [(b"content-length", str(len(content)).encode()), (b"content-type", kind)]
    headers += [(k.lower().encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


async def _read(receive: Receive, length: int) -> tuple[bytes | None, Receive]:
    """The whole body (``None`` if the client left), and a ``receive`` that hands it out again
    (for the ordinary path). Counts the bytes: more than ``length`` (the request's
    ``Content-Length``, at most the hot path's limit) is refused as soon as it arrives, so no
    more than that is ever held."""
    chunks = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, receive
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > length:
            raise overrun(length, seen)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    raw = b"".join(chunks)
    return raw, replaying(raw, receive)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app ``body`` (already read) as one message, then passes
    on what comes (only a disconnect can)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def overrun(length: int, seen: int) -> InvalidRequest:
    """``400 invalid_request``: the body goes on past the length its header announced."""
    return InvalidRequest(
        f"body: {seen} bytes or more arrived, more than the {length} of its Content-Length."
        " Send a Content-Length equal to the body's size.",
        field="body",
    )
