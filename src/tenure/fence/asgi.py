"""Guards for an HTTP service: a FastAPI dependency per route, and ASGI middleware.

A client that holds a tenure lease sends its token in the ``Tenure-Token`` header. The guard
admits the token through a :class:`KeyFence` for the key the *route* names; a lower token than
one already admitted for the key gets ``409 stale_token`` as a problem document, and the
handler is not called.

- :func:`fenced`: ``Depends(fenced("orders/{order_id}", fence=store))`` on each write route.
  It runs as one of the route's dependencies, so after the authentication dependencies
  declared before it (or passed as ``auth=``).
- :class:`TokenFence`: middleware for a whole ASGI app, with ``key=`` a fixed key or a function
  of the request.

The key comes from the route (its converted path parameters), or from the caller's
``Tenure-Key`` header only on request (``key=key_from_header``): a caller could otherwise name any
key. A token must come with the ``Tenure-Key`` it was issued for, and a key other than the
route's is refused. There is no default store: each replica of a service must share one
(:class:`ConnectedFence` on your database, :class:`RedisFence`), so it is always named.
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

from tenure.errors import FenceMisuse, InvalidRequest, TenureError
from tenure.fence._args import check_bound, check_key, key_patterns, parse_token
from tenure.fence.keyed import KeyFence, warn_if_memory
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
    """The headers a lease holder sends to a guarded service: the token, and the key it was
    issued for (the guard refuses a key other than the route's)."""
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
    keeps the largest token per key and is required (a store every replica shares). With
    ``required=False`` requests without a token pass unchecked. The admitted
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
        self.fence: KeyFence = require_store(fence, "TokenFence")
        warn_if_memory(self.fence)
        self.key_of: KeyOf = _key_function(key)
        self.methods = frozenset(m.upper() for m in methods)
        self.required = required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"].upper() not in self.methods:
            await self.app(scope, receive, send)
            return
        try:
            admitted = await _admit(scope, self.fence, self.key_of(scope), self.required)
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


def require_store(fence: object, guard: str) -> KeyFence:
    """The guard's store, which must be named: a default would be local to each replica."""
    if fence is None:
        raise FenceMisuse(
            f"{guard}: name the store that keeps the tokens, e.g. fence=ConnectedFence(connect) "
            "on your database or fence=RedisFence(redis). There is no default: a file or memory "
            "of each process or machine would let a stale token through on another replica.",
            field="fence",
            state="missing",
        )
    if not callable(getattr(fence, "admit", None)):
        raise FenceMisuse(
            f"{guard}: fence={type(fence).__name__} has no admit(key, token); pass a "
            "ConnectedFence, SqliteFence, RedisFence or CheckedFence",
            field="fence",
            state="unsupported",
        )
    return fence  # type: ignore[return-value]


class RouteGuard:
    """What :func:`fenced` returns: a FastAPI dependency, and a fence for admit-on-acquire
    (``client.lease(key, fences=[guard])``) that refuses a lease key its template cannot
    name."""

    blocking = True

    def __init__(
        self,
        key: str | KeyOf,
        fence: KeyFence,
        required: bool,
        auth: Callable[..., Any] | None,
    ) -> None:
        self.key = key
        self.fence = fence
        self.required = required
        self.keys = key_patterns(key if isinstance(key, str) else None)
        params = [inspect.Parameter("request", _KW, annotation=Request)]
        if auth is not None:  # runs first: a refused caller never reaches the fence
            params.append(inspect.Parameter("_", _KW, annotation=Annotated[Any, Depends(auth)]))
        self.__signature__ = inspect.Signature(params, return_annotation=Admitted | None)

    async def __call__(self, request: Request, _: Any = None) -> Admitted | None:
        try:
            key = await _route_key(self.key, request.scope)
            return await _admit(request.scope, self.fence, key, self.required)
        except TenureError as error:
            raise FenceRefused(error) from None

    def admit(self, key: str, token: int) -> int:
        """Admit ``token`` for ``key`` in the store, after checking that the route's key
        template can name ``key`` (:class:`tenure.FenceMisuse` if not: the lease and the
        guard would fence different keys, and admitting would close nothing)."""
        key = check_bound(self.keys, check_key(key))
        admitted: int = self.fence.admit(key, token)
        return admitted

    def current(self, key: str) -> int | None:
        return self.fence.current(key)


def fenced(
    key: str | KeyOf,
    *,
    fence: KeyFence | None = None,
    required: bool = True,
    auth: Callable[..., Any] | None = None,
) -> RouteGuard:
    """A FastAPI dependency that admits the request's ``Tenure-Token`` for ``key``.

    ``key`` is a template over the route's path parameters (``"orders/{order_id}"``), filled
    with the values as the route converts them (``/orders/017`` and ``/orders/17`` are one key
    for an ``int`` parameter), or a function of the ASGI scope. ``fence`` is the store (no
    default: name one every replica shares; :class:`tenure.FenceMisuse` without it). Declare
    it after your authentication dependency, or pass that dependency as ``auth=`` (it then
    runs first, and a refused caller never reaches the fence). ``required=False`` lets a
    request without a token through (the dependency gives ``None``). A refusal raises
    :class:`FenceRefused` (``409 stale_token`` or ``422 invalid_request``). The result is also
    a fence for ``client.lease(key, fences=[...])``, refusing lease keys the template cannot
    name.
    """
    template = check_key(key) if isinstance(key, str) else key
    store = require_store(fence, "fenced")
    warn_if_memory(store)
    return RouteGuard(template, store, required, auth)


_KW = inspect.Parameter.POSITIONAL_OR_KEYWORD


_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


async def _route_key(key: str | KeyOf, scope: Scope) -> str | None:
    """The key for this request: the template filled with the route's path parameters as the
    route converts them (Starlette's convertors, then the types FastAPI declares)."""
    if not isinstance(key, str):
        return key(scope)
    params = dict(scope.get("path_params", {}))
    missing = [n for n in _PARAM.findall(key) if n not in params]
    if missing:
        raise RuntimeError(f"fenced({key!r}): the route has no parameter {missing[0]}")
    params.update(_converted(scope, params))
    return _PARAM.sub(lambda m: str(params[m.group(1)]), key)


def _converted(scope: Scope, raw: dict[str, Any]) -> dict[str, Any]:
    """The path parameters as the route's handler and dependencies declare them (an ``int``
    order id turns ``017`` into ``17``); a value they would refuse is ``422`` naming it."""
    dependant = getattr(scope.get("route"), "dependant", None)
    if dependant is None:
        return {}
    from fastapi.dependencies.utils import request_params_to_args

    fields: dict[str, Any] = {}
    todo = [dependant]
    while todo:  # the handler's and its dependencies' path parameters, the first of a name
        current = todo.pop(0)
        for field in current.path_params:
            fields.setdefault(field.name, field)
        todo.extend(current.dependencies)
    values, errors = request_params_to_args(list(fields.values()), raw)
    if errors:
        name = str(errors[0].get("loc", ("path", "?"))[-1])
        raise InvalidRequest(f"path parameter {name}: {errors[0].get('msg')}", field=name)
    return values


async def _admit(scope: Scope, fence: KeyFence, key: str | None, required: bool) -> Admitted | None:
    raw = _header(scope, TOKEN_HEADER)
    if raw is None:
        if required:
            raise InvalidRequest(f"this request needs a {TOKEN_HEADER} header", field=TOKEN_HEADER)
        return None
    token = parse_token(raw.strip(), TOKEN_HEADER)
    if key is None:
        raise InvalidRequest(f"this request needs a {KEY_HEADER} header", field=KEY_HEADER)
    key = check_key(key)
    _check_claim(scope, key, token)
    if fence.blocking:
        await anyio.to_thread.run_sync(fence.admit, key, token)
    else:
        fence.admit(key, token)
    return Admitted(key, token)


def _check_claim(scope: Scope, key: str, token: int) -> None:
    """A token is per key: one issued for another key says nothing about this one (a larger
    one would jam the key against its real holder). The caller names the key its token was
    issued for in ``Tenure-Key``; this guard's key must be that key."""
    claimed = _header(scope, KEY_HEADER)
    if claimed is None:
        raise InvalidRequest(
            f"this request needs a {KEY_HEADER} header naming the key token {token} was issued "
            f"for (tenure.fence.headers(key, token) sends both)",
            field=KEY_HEADER,
        )
    if claimed != key:
        raise InvalidRequest(
            f"token {token} was issued for {claimed!r}, not for {key!r}, the key this route "
            "fences: a token of another key is refused",
            field=KEY_HEADER,
        )


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
