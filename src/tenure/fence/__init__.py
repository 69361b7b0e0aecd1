"""Let your own resources check tenure's fencing tokens.

- :class:`TableFence`: inside your SQLite or PostgreSQL transaction, ``admit(conn, key,
  token)`` refuses a token lower than one already admitted for the key, in one conditional
  upsert, so the check commits with your write.
- :class:`TokenFence`: ASGI middleware for your HTTP service that refuses a stale
  ``Tenure-Token`` header with ``409 stale_token``; :func:`headers` builds the headers.
- :class:`MemoryFence`, :class:`ConnectedFence`: the per-key stores the middleware uses.

See docs/fencing.md for a worked example.
"""

from tenure.fence.asgi import KEY_HEADER, TOKEN_HEADER, TokenFence, headers
from tenure.fence.keyed import ConnectedFence, KeyFence, MemoryFence
from tenure.fence.table import TableFence, dialect_of

__all__ = [
    "KEY_HEADER",
    "TOKEN_HEADER",
    "ConnectedFence",
    "KeyFence",
    "MemoryFence",
    "TableFence",
    "TokenFence",
    "dialect_of",
    "headers",
]
