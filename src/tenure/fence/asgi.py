"""``TokenFence``: ASGI middleware that refuses requests carrying a stale fencing token.

A client that holds a tenure lease sends its token in the ``Tenure-Token`` header (and the
lease key in ``Tenure-Key`` unless the middleware derives the key itself). The middleware
admits the token through a :class:`KeyFence` before the application sees the request; a
lower token than one already admitted for the key gets ``409 stale_token`` as a problem
document, and the application is not called.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import anyio.to_thread

from tenure.errors import InvalidRequest, TenureError
from tenure.fence._args import check_key, parse_token
from tenure.fence.keyed import KeyFence, MemoryFence

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
KeyOf = Callable[[Scope], "str | None"]

TOKEN_HEADER = "Tenure-Token"
KEY_HEADER = "Tenure-Key"


def headers(key: str, token: int) -> dict[str, str]:
    """The headers a lease holder sends to a service guarded by :class:`TokenFence`."""
    return {KEY_HEADER: check_key(key), TOKEN_HEADER: str(token)}


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode("latin-1")
    for raw_name, value in scope.get("headers", ()):
        if raw_name.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


class TokenFence:
    """Guard an ASGI app: requests with the given methods must carry a current token.

    ``key`` says which tenure lease key a request writes under: a fixed string, a function
    of the ASGI scope, or (default) the ``Tenure-Key`` header. ``fence`` keeps the largest
    token per key (default: a :class:`MemoryFence`). With ``required=False`` requests without
    a token pass unchecked. The admitted ``(key, token)`` is left in ``scope["state"]`` under
    ``"tenure_fence"`` for the application to use.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        fence: KeyFence | None = None,
        key: str | KeyOf | None = None,
        methods: Iterable[str] = ("POST", "PUT", "PATCH", "DELETE"),
        required: bool = True,
    ) -> None:
        self.app = app
        self.fence: KeyFence = fence if fence is not None else MemoryFence()
        self.key_of: KeyOf = _key_function(key)
        self.methods = frozenset(m.upper() for m in methods)
        self.required = required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"].upper() not in self.methods:
            await self.app(scope, receive, send)
            return
        try:
            admitted = await self._admit(scope)
        except TenureError as error:
            await _send_problem(send, error)
            return
        if admitted is not None:
            scope.setdefault("state", {})["tenure_fence"] = admitted
        await self.app(scope, receive, send)

    async def _admit(self, scope: Scope) -> tuple[str, int] | None:
        raw = _header(scope, TOKEN_HEADER)
        if raw is None:
            if self.required:
                raise InvalidRequest(
                    f"this request needs a {TOKEN_HEADER} header", field=TOKEN_HEADER
                )
            return None
        token = parse_token(raw.strip(), TOKEN_HEADER)
        key = self.key_of(scope)
        if key is None:
            raise InvalidRequest(f"this request needs a {KEY_HEADER} header", field=KEY_HEADER)
        key = check_key(key)
        if self.fence.blocking:
            await anyio.to_thread.run_sync(self.fence.admit, key, token)
        else:
            self.fence.admit(key, token)
        return key, token


def _key_function(key: str | KeyOf | None) -> KeyOf:
    if key is None:
        return lambda scope: _header(scope, KEY_HEADER)
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
