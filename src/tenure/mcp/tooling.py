"""What every tool module shares: how a tool acts (:func:`act`) and the hints it declares.

A tool acts through the :class:`~tenure.mcp.backend.Backend` of its caller, in a worker thread
(the client blocks) of the tools' own. A tool that is not read-only renews the live leases of the
caller's session first (the heartbeat: a working agent never lapses, a dead one lapses on its
own); a read-only one changes nothing (:data:`tenure.mcp.server.RENEWS`). A refusal about an
item is worded for whoever asked, from the item as it is after the refusal
(:func:`tenure.mcp.failures.error_text`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.lowlevel import RunVar
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

from tenure.core.items import ITEM_PREFIX, ItemView
from tenure.errors import TenureError
from tenure.mcp.backend import Backend
from tenure.mcp.failures import Asker, Told, error_text, reported
from tenure.mcp.server import RENEWS, TenureServer

T = TypeVar("T")
Tool = TypeVar("Tool", bound=Callable[..., Awaitable[Any]])
Resolver = Callable[[Context], Backend]

#: changes nothing, not even the caller's leases
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
SAFE_AGAIN = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ENDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
ENDS_ONCE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
#: how many tools run at once (each in a worker thread of its own)
TOOL_THREADS = 40
#: the worker threads of the tools, apart from the default ones: on ``/mcp`` a tool's thread
#: waits for a request of the same server, which may need a default worker thread of its own
_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("tenure_mcp_tool_threads")
#: the refusals whose words depend on the item as it is now
ABOUT_THE_ITEM = ("stale_token", "lease_lost", "conflict")
#: the refusals whose words depend on who asks
ABOUT_THE_ASKER = ("lease_held", "not_holder", *ABOUT_THE_ITEM)


def item_of(key: str | None) -> str | None:
    """The item whose claim ``key`` is (``items/<id>``), else ``None``: item keys go to the item
    verbs, as the lease verbs refuse them."""
    key = key or ""
    return key[len(ITEM_PREFIX) :] if key.startswith(ITEM_PREFIX) and key != ITEM_PREFIX else None


def explain(err: TenureError, backend: Backend, item: str | None) -> str:
    """``err`` in words for the caller of ``backend``, about ``item`` as it is now."""
    if err.code not in ABOUT_THE_ASKER:
        return error_text(err)
    try:
        asker = Asker(backend.me().name, backend.session)
    except TenureError:
        return error_text(err)
    item = item or item_of(err.key)
    view: ItemView | None = None
    if item is not None and err.code in ABOUT_THE_ITEM:
        try:
            view = backend.show_item(item)
        except TenureError:
            view = None
    return error_text(err, asker, view)


async def act(
    ctx: Context,
    resolve: Resolver,
    verb: Callable[[Backend], T],
    beat: bool | None = None,
    item: str | None = None,
) -> T:
    """Run ``verb`` on the caller's backend in a worker thread, after a heartbeat unless the
    tool is read-only (or ``beat`` is false). ``item``: the item the verb is about, so that a
    refusal can say what became of it."""
    backend = resolve(ctx)
    renew = RENEWS.get() if beat is None else beat

    def run() -> T:
        if renew:
            backend.heartbeat()
        try:
            return verb(backend)
        except TenureError as err:
            raise Told(explain(err, backend, item)) from err

    return await anyio.to_thread.run_sync(run, limiter=tool_threads())


def tool_threads() -> anyio.CapacityLimiter:
    """The tools' worker threads on this event loop."""
    try:
        return _THREADS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(TOOL_THREADS)
        _THREADS.set(limiter)
        return limiter


def tool(server: MCPServer[Any], hints: ToolAnnotations) -> Callable[[Tool], Tool]:
    """Register the decorated coroutine on ``server`` as a tool with ``hints``, its reply
    compact JSON and its refusals tool errors (:func:`tenure.mcp.failures.reported`)."""

    def register(fn: Tool) -> Tool:
        server.tool(annotations=hints)(reported(fn))
        if isinstance(server, TenureServer):
            server.harden_tool(fn.__name__)
        return fn

    return register
