"""uvicorn's HTTP protocol, serving the ordinary hot call without an ASGI task.

Through ASGI every request costs the event loop a task, a scope, ``receive``/``send`` messages
and uvicorn's header checks on the reply, even once FastAPI is out of the way
(:mod:`tenure.server.http.hotpath`). This subclass of uvicorn's httptools protocol holds back
the ASGI task of a request that may be a hot call until its body is in, then hands the job
straight to the executor and writes the reply to the transport from the job's completion
callback. What it buys (measured with ``bench/trees.py``, alternated rounds, against the
same server without it): without it the SQLite cycle ran at 0.85x the ops/s (every round
slower) with 18-23 % more server CPU per call; on PostgreSQL 8 % more CPU per call (ops/s
inconclusive).
The price: it overrides a private method of uvicorn (``_start_asgi_task``), so
``pyproject.toml`` pins uvicorn to one exact version; check this module when raising it.

It takes only the plainest case and gives everything else to the app unchanged, before any side
effect: what :func:`tenure.server.http.hotpath.eligible` and
:func:`~tenure.server.http.hotpath.parse` (the verb's own input model) refuse, a long-poll
(``wait_ms``), ``Expect: 100-continue``, a pipelined request, a token the server's memory
cannot answer for (:meth:`tenure.server.http.auth.Authenticator.quick`: the app asks the
database), and errors other than the service's own (those are rendered by the app's handlers,
as on the ASGI path). Keep-alive, graceful shutdown (``connection: close`` on the in-flight
reply) and the pipeline queue are uvicorn's, through the request's own
``RequestResponseCycle``.

The server uses it unless the access log is on (uvicorn writes that line on the ASGI path).
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import Any, cast

from starlette.types import Scope
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, RequestResponseCycle

from tenure.errors import RateLimited, TenureError
from tenure.server.http import hotpath, problems
from tenure.server.http.app import FALLBACK, TenureApp
from tenure.server.http.auth import TARPIT_S
from tenure.server.http.deps import State, dumps
from tenure.server.timeouts import TimedProtocol, source
from tenure.verbs.leases import ACQUIRE

Held = tuple[RequestResponseCycle, Any]


def hot_protocol(app: TenureApp) -> type[TimedProtocol]:
    """The protocol class for uvicorn's ``http=`` setting, serving ``app``'s hot calls."""
    return type("TenureProtocol", (HotProtocol,), {"tenure_app": app})


class HotProtocol(TimedProtocol):
    """Also times the reading of each request (:class:`TimedProtocol`)."""

    tenure_app: TenureApp
    _in_headers = False
    _held: Held | None = None

    def on_headers_complete(self) -> None:
        self._held, self._in_headers = None, True
        try:
            super().on_headers_complete()
        finally:
            self._in_headers = False

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        if (
            self._in_headers
            and app is self.app
            and not cycle.waiting_for_100_continue
            and hotpath.eligible(cast(Scope, cycle.scope), self.tenure_app.limit)
        ):
            self._held = (cycle, app)  # until the body is in: on_message_complete
            return
        super()._start_asgi_task(cycle, app)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        held, self._held = self._held, None
        if held is not None:
            self._serve(*held)

    def _serve(self, cycle: RequestResponseCycle, app: Any) -> None:
        st = self.tenure_app.tenure
        path = cycle.scope["path"]
        body = hotpath.parse(path, bytes(cycle.body))
        token = hotpath.bearer(cast(Scope, cycle.scope))
        if st is None or body is None or token is None or getattr(body, "wait_ms", None):
            super()._start_asgi_task(cycle, app)
            return
        started = time.perf_counter()
        me = st.auth.quick(token, source(cast(Scope, cycle.scope), self.trusted))
        if me is None:  # the database must be asked: the ASGI path awaits it
            super()._start_asgi_task(cycle, app)
            return
        if isinstance(me, TenureError):  # refused from memory: 401, or 429 a second late
            refuse = partial(self._refuse, cycle, st, me, token, started)
            if isinstance(me, RateLimited):
                asyncio.get_running_loop().call_later(TARPIT_S, refuse)
            else:
                refuse()
            return
        answer = partial(self._done, cycle, app, st, started)
        try:
            call = hotpath.job(st, path, me, body)
            st.executor.call(call, body.key, answer, acquire=path == ACQUIRE.path)
        except RuntimeError:  # the executor is closed: the server is stopping
            super()._start_asgi_task(cycle, app)

    def _refuse(
        self, cycle: RequestResponseCycle, st: State, err: TenureError, token: str, started: float
    ) -> None:
        headers = problems.error_headers(err, f"Bearer {token}")
        self._reply(cycle, err.status, dumps(err.to_problem()), headers)
        hotpath.observe(st, cycle.scope["path"], err.status, started)

    def _done(
        self,
        cycle: RequestResponseCycle,
        app: Any,
        st: State,
        started: float,
        ok: bool,
        outcome: Any,
    ) -> None:
        """The executor's answer (on the loop, once the call is durable): write the reply."""
        path = cycle.scope["path"]
        headers = None
        if ok:
            status, content = 200, outcome
        elif isinstance(outcome, TenureError):  # a refusal: a 429's Retry-After too
            status, content = outcome.status, dumps(outcome.to_problem())
            headers = problems.error_headers(outcome, None)
        elif isinstance(outcome, hotpath.Fallback):  # nothing changed: FastAPI answers it
            cycle.scope[FALLBACK] = True  # type: ignore[literal-required]
            super()._start_asgi_task(cycle, app)
            return
        else:
            err = outcome if isinstance(outcome, Exception) else RuntimeError(outcome)
            super()._start_asgi_task(cycle, partial(_render, err, st, started))
            return
        self._reply(cycle, status, content, headers)
        hotpath.observe(st, path, status, started)

    def _reply(
        self,
        cycle: RequestResponseCycle,
        status: int,
        content: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        """What ``cycle.send`` writes for a JSON reply of known length, in one write."""
        if cycle.disconnected or self.transport.is_closing():
            return  # (a pipelined request behind this one holds self.cycle: check both)
        kind = hotpath.PROBLEM_TYPE if status >= 400 else hotpath.JSON_TYPE
        out = [STATUS_LINE[status]]
        for name, value in cycle.default_headers:
            out += [name, b": ", value, b"\r\n"]
        out += [b"content-length: ", str(len(content)).encode(), b"\r\n"]
        out += [b"content-type: ", kind, b"\r\n"]
        for field, text in (headers or {}).items():
            out += [field.lower().encode(), b": ", text.encode(), b"\r\n"]
        if not cycle.keep_alive:
            out.append(b"connection: close\r\n")
        out += [b"\r\n", content]
        cycle.response_started = cycle.response_complete = True
        self.transport.write(b"".join(out))
        cycle.message_event.set()
        if not cycle.keep_alive:
            self.transport.close()
        cycle.on_response()


async def _render(
    err: Exception, st: State, started: float, scope: Any, receive: Any, send: Any
) -> None:
    """An ASGI app that answers with the app's own handler for ``err`` (as the ASGI path)."""
    status = await hotpath.render_error(err, scope["path"], scope, receive, send)
    hotpath.observe(st, scope["path"], status, started)
