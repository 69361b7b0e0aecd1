"""Guards for an HTTP service: a FastAPI dependency per route, and ASGI middleware.

A client that holds a tenure lease sends its token in the ``Tenure-Token`` header. The guard
admits the token through a :class:`KeyFence` for the key the *route* names; a lower token than
one already admitted for the key gets ``409 stale_token`` as a problem document, and the
handler is not called.

- :func:`fenced`: ``Depends(fenced("orders/{order_id}"))`` on each write route that needs it.
  It runs as one of the route's dependencies, so after the authentication dependencies
  declared before it (or passed as ``auth=``).
- :class:`TokenFence`: middleware for a whole ASGI app, with ``key=`` a fixed key or a function
  of the request.

The key comes from the caller's ``Tenure-Key`` header only on request (``key=key_from_header``):
a caller could otherwise name any key. The default store is persistent (:class:`SqliteFence`).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Annotated, Any, NamedTuple, TypeVar

import anyio.to_thread
from fastapi import Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from tenure.errors import InvalidRequest, TenureError
from tenure.fence._args import check_key, parse_token
from tenure.fence.keyed import KeyFence, default_fence, warn_if_memory
from tenure.fence.table import TableFence

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
KeyOf = Callable[[Scope], "str | None"]

TOKEN_HEADER = "Tenure-Token"
KEY_HEADER = "Tenure-Key"


def headers(key: str, token: int) -> dict[str, str]:
    """The headers a lease holder sends to a guarded service (the key is informative unless
    the service reads it with :func:`key_from_header`)."""
    return {KEY_HEADER: check_key(key), TOKEN_HEADER: str(token)}


C = TypeVar("C")


class Admitted(NamedTuple):
    """What a guard admitted for a request: the lease key and the token.

    The guard checked at the door; a request admitted a moment before a newer holder's may
    still be running when that holder writes. Re-check where the write is:
    ``with admitted.transaction(conn):`` fences the handler's own write transaction with this
    key and token (a :class:`~tenure.fence.TableFence` in the handler's database), so a slow
    handler's stale write is refused (:class:`tenure.StaleToken`) if a newer token wrote first.
    """

    key: str
    token: int

    def transaction(self, conn: C, fence: TableFence | None = None) -> AbstractContextManager[C]:
        """:meth:`TableFence.transaction` on ``conn`` for the admitted key and token."""
        return (fence or TableFence()).transaction(conn, self.key, self.token)

    def atransaction(
        self, conn: C, fence: TableFence | None = None
    ) -> AbstractAsyncContextManager[C]:
        """:meth:`TableFence.atransaction` on ``conn`` for the admitted key and token."""
        return (fence or TableFence()).atransaction(conn, self.key, self.token)

    def admit(self, conn: Any, fence: TableFence | None = None) -> int:
        """:meth:`TableFence.admit` inside a transaction the handler manages itself."""
        return (fence or TableFence()).admit(conn, self.key, self.token)


def key_from_header(scope: Scope) -> str | None:
    """Opt-in: take the key from the caller's ``Tenure-Key`` header. Only for a service whose
    callers are trusted to name the right key; a stale holder could name another one."""
    return _header(scope, KEY_HEADER)


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode("latin-1")
    for raw_name, value in scope.get("headers", ()):
        if raw_name.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


class TokenFence:
    """Guard an ASGI app: requests with the given methods must carry a current token.

    ``key`` says which tenure lease key a request writes under: a fixed string or a function
    of the ASGI scope (:func:`key_from_header` to trust the caller's ``Tenure-Key``). ``fence``
    keeps the largest token per key (default: :func:`~tenure.fence.default_fence`, a SQLite
    file). With ``required=False`` requests without a token pass unchecked. The admitted
    :class:`Admitted` is left in ``scope["state"]["tenure_fence"]``.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        key: str | KeyOf,
        fence: KeyFence | None = None,
        methods: Iterable[str] = ("POST", "PUT", "PATCH", "DELETE"),
        required: bool = True,
    ) -> None:
        self.app = app
        self.fence: KeyFence = fence if fence is not None else default_fence()
        warn_if_memory(self.fence)
        self.key_of: KeyOf = _key_function(key)
        self.methods = frozenset(m.upper() for m in methods)
        self.required = required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"].upper() not in self.methods:
            await self.app(scope, receive, send)
            return
        try:
            admitted = await _admit(scope, self.fence, self.key_of, self.required)
        except TenureError as error:
            await _send_problem(send, error)
            return
        if admitted is not None:
            scope.setdefault("state", {})["tenure_fence"] = admitted
        await self.app(scope, receive, send)


class FenceRefused(HTTPException):
    """A request refused by :func:`fenced`: the problem document is the ``detail``; register
    :func:`problem_response` as the handler of this class to answer it as
    ``application/problem+json``."""

    def __init__(self, error: TenureError) -> None:
        super().__init__(error.status, detail=error.to_problem())
        self.error = error


async def problem_response(request: Request, exc: Exception) -> JSONResponse:
    """An exception handler for :class:`FenceRefused` (refused at the door) and for a
    :class:`tenure.TenureError` the handler let out (``StaleToken`` refused at the write):
    the bare problem document."""
    error = exc.error if isinstance(exc, FenceRefused) else exc
    if not isinstance(error, TenureError):
        raise exc
    return JSONResponse(error.to_problem(), error.status, media_type="application/problem+json")


def fenced(
    key: str | KeyOf,
    *,
    fence: KeyFence | None = None,
    required: bool = True,
    auth: Callable[..., Any] | None = None,
) -> Callable[..., Awaitable[Admitted | None]]:
    """A FastAPI dependency that admits the request's ``Tenure-Token`` for ``key``.

    ``key`` is a template over the route's path parameters (``"orders/{order_id}"``) or a
    function of the ASGI scope. Declare it after your authentication dependency, or pass that
    dependency as ``auth=`` (it then runs first, and a refused caller never reaches the
    fence). ``required=False`` lets a request without a token through (the dependency gives
    ``None``). A refusal raises :class:`FenceRefused` (``409 stale_token`` or
    ``422 invalid_request``).
    """
    key_of = _route_key(key)
    store: KeyFence = fence if fence is not None else default_fence()
    warn_if_memory(store)

    async def guard(request: Request) -> Admitted | None:
        try:
            return await _admit(request.scope, store, key_of, required)
        except TenureError as error:
            raise FenceRefused(error) from None

    if auth is None:
        return guard

    async def guard_after_auth(request: Request, _: Any) -> Admitted | None:
        return await guard(request)

    # the annotation names a local (``auth``): give FastAPI the signature as objects
    setattr(  # noqa: B010 (mypy: a function has no __signature__ attribute)
        guard_after_auth,
        "__signature__",
        inspect.Signature(
            [
                inspect.Parameter("request", _KW, annotation=Request),
                inspect.Parameter("_", _KW, annotation=Annotated[Any, Depends(auth)]),
            ],
            return_annotation=Admitted | None,
        ),
    )
    return guard_after_auth


_KW = inspect.Parameter.POSITIONAL_OR_KEYWORD


_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _route_key(key: str | KeyOf) -> KeyOf:
    if not isinstance(key, str):
        return key
    template = check_key(key)

    def of(scope: Scope) -> str:
        params = scope.get("path_params", {})
        missing = [n for n in _PARAM.findall(template) if n not in params]
        if missing:
            raise RuntimeError(f"fenced({template!r}): the route has no parameter {missing[0]}")
        return _PARAM.sub(lambda m: str(params[m.group(1)]), template)

    return of


async def _admit(scope: Scope, fence: KeyFence, key_of: KeyOf, required: bool) -> Admitted | None:
    raw = _header(scope, TOKEN_HEADER)
    if raw is None:
        if required:
            raise InvalidRequest(f"this request needs a {TOKEN_HEADER} header", field=TOKEN_HEADER)
        return None
    token = parse_token(raw.strip(), TOKEN_HEADER)
    key = key_of(scope)
    if key is None:
        raise InvalidRequest(f"this request needs a {KEY_HEADER} header", field=KEY_HEADER)
    key = check_key(key)
    if fence.blocking:
        await anyio.to_thread.run_sync(fence.admit, key, token)
    else:
        fence.admit(key, token)
    return Admitted(key, token)


def _key_function(key: str | KeyOf) -> KeyOf:
    if isinstance(key, str):
        fixed = check_key(key)
        return lambda scope: fixed
    return key


async def _send_problem(send: Send, error: TenureError) -> None:
    body = json.dumps(error.to_problem()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
