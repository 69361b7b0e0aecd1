"""Let your own resources check tenure's fencing tokens.

- :class:`TableFence`: ``with fence.transaction(conn, key, token):`` owns the transaction of
  your guarded write in SQLite or PostgreSQL (sqlite3, psycopg 3, psycopg2, SQLAlchemy,
  Django; ``atransaction`` for psycopg async, asyncpg, aiosqlite): it refuses a token lower
  than one already admitted for the key, in one conditional upsert that commits with your
  write. ``admit(conn, key, token)`` is the same check inside a transaction you manage.
- :func:`fenced`: a FastAPI dependency per route
  (``Depends(fenced("orders/{order_id}", fence=store))``) that refuses a stale
  ``Tenure-Token`` header with ``409 stale_token``; :class:`TokenFence`
  is the same guard as ASGI middleware; :func:`headers` builds the headers.
- :class:`SqliteFence`, :class:`ConnectedFence`, :class:`MemoryFence`: per-key stores with
  ``admit(key, token)``; :class:`~tenure.fence.redis.RedisFence` keeps tokens in Redis.
- :class:`CheckedFence`: checked mode, admits only the token tenure says is current and live.

See docs/fencing.md for a worked example.
"""

from typing import TYPE_CHECKING, Any

from tenure.errors import FenceBusy, FenceMisuse
from tenure.fence.checked import CheckedFence
from tenure.fence.keyed import ConnectedFence, KeyFence, MemoryFence, SqliteFence
from tenure.fence.redis import RedisFence
from tenure.fence.table import TableFence, dialect_of

if TYPE_CHECKING:
    from tenure.fence.asgi import (
        KEY_HEADER,
        TOKEN_HEADER,
        Admitted,
        FenceRefused,
        RouteGuard,
        TokenFence,
        fenced,
        headers,
        key_from_header,
        problem_response,
    )

#: the HTTP guards, imported on first use: they import FastAPI (about 140 ms), which a
#: command such as ``tenure fence reset`` never needs (the CLI started in 0.38 s with them
#: imported up front, 0.2 s without)
_ASGI = {
    "KEY_HEADER",
    "TOKEN_HEADER",
    "Admitted",
    "FenceRefused",
    "RouteGuard",
    "TokenFence",
    "fenced",
    "headers",
    "key_from_header",
    "problem_response",
}


def __getattr__(name: str) -> Any:
    if name in _ASGI:
        from tenure.fence import asgi

        return getattr(asgi, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KEY_HEADER",
    "TOKEN_HEADER",
    "Admitted",
    "CheckedFence",
    "ConnectedFence",
    "FenceBusy",
    "FenceMisuse",
    "FenceRefused",
    "KeyFence",
    "MemoryFence",
    "RedisFence",
    "RouteGuard",
    "SqliteFence",
    "TableFence",
    "TokenFence",
    "dialect_of",
    "fenced",
    "headers",
    "key_from_header",
    "problem_response",
]
