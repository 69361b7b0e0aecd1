"""Refusals as MCP tool errors: ``isError`` results whose text names the code and the facts,
worded with the CLI's :func:`~tenure.cli.render.describe` (instants in UTC), then what an agent
should do about it. Never the SDK's bare "Error executing tool"."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import ParamSpec, TypeVar, cast

from mcp_types import CallToolResult, TextContent

from tenure.cli.render import describe, relative
from tenure.errors import AssignedToOther, InvalidRequest, LeaseHeld, NotHolder, TenureError

P = ParamSpec("P")
R = TypeVar("R")

TAKEOVER = (
    "to take it over call claim with takeover=true and a reason, only if you know they stopped"
)
NEXT_STEP: dict[str, str] = {
    "lease_held": "Someone else (or another session of yours: another connection or agent with "
    "your token) holds it: pick another item (tool ready) or come back after it expires; do not "
    "take it over.",
    "assigned_to_other": "Prefer another item (tool ready).",
    "stale_token": "Your claim was replaced: stop this work, do not send this epoch again, and "
    "look at the item (tool show_item).",
    "lease_lost": "Your lease is gone: claim or acquire it again before going on, and check "
    "whether someone else did the work meanwhile.",
    "not_holder": "You do not hold it: leave it alone.",
    "not_found": "Check the id (tools ready, queue, show_item, list_leases).",
    "invalid_request": "Fix the argument named and call again.",
    "too_large": "Send less and call again.",
    "unauthenticated": "The token is missing, unknown or revoked.",
    "transport_error": "The tenure server did not answer: try again shortly.",
}
REVOKED_STEP = (
    "Do not claim it again, not even with takeover: ask whoever stopped it (tool show_item: "
    "its force_released transfer names them and why), or wait until it is reassigned."
)
ITEM_TOOLS = (
    "use the item tools with item_id={id} instead (claim, renew, extend, release, progress, "
    "complete; force_release with item_id)"
)


def utc(ms: int | None) -> str:
    """``14:03:10Z, in 28s`` today (UTC), else ``2026-11-24T14:03:10Z, 2d ago``."""
    if ms is None:
        return "-"
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    today = moment.date() == datetime.now(UTC).date()
    return f"{moment.strftime('%H:%M:%SZ' if today else '%Y-%m-%dT%H:%M:%SZ')}, {relative(ms)}"


def held(err: LeaseHeld | NotHolder) -> str:
    """``items/42 held by jo/agent-3 (session mcp-1f2e, task fix-login) until 14:03:10Z, in 28s
    left``: the holder, its session (unless the default one), its task and its deadline."""
    key = f"{err.key} " if err.key else ""
    facts = [f"session {err.session}"] if err.session else []
    facts += [f"task {err.task}"] if err.task else []
    said = f" ({', '.join(facts)})" if facts else ""
    left = f" until {utc(err.expires_at)} left" if err.expires_at else ""
    return f"{key}held by {err.holder}{said}{left}".strip()


def error_text(err: TenureError) -> str:
    """``lease_held: items/42 held by jo/agent-3 (session mcp-1f2e, task fix-login) until
    14:03:10Z, in 28s left. Someone else … holds it: …``."""
    step = NEXT_STEP.get(err.code)
    if isinstance(err, LeaseHeld | NotHolder):
        words = held(err)
    elif isinstance(err, AssignedToOther) and err.lease_state == "revoked":
        key = f"{err.key} " if err.key else ""
        words = (
            f"{key}assigned to {err.assignee}, its claim revoked: an authority force-released "
            "it and stopped the work on purpose"
        )
        step = f"{REVOKED_STEP} Meanwhile pick another item (tool ready)."
    elif item_key_refused(err):
        assert err.key is not None
        item = err.key.split("/", 1)[1]
        words = f"key {err.key} is the claim of item {item!r}: the lock tools take no item keys"
        step = ITEM_TOOLS.replace("{id}", item).capitalize() + "."
    else:
        words = describe(err, at=utc, takeover=TAKEOVER)
    said = err.code.replace("_", " ") + ": "
    if words.startswith(said):  # "not found: no item 'x'" names its code already
        words = words[len(said) :]
    return f"{err.code}: {words}" + (f". {step}" if step else "")


def item_key_refused(err: TenureError) -> bool:
    """A lease verb refused an item's key (``items/<id>``): the item verbs are the way."""
    key = err.key or ""
    return (
        type(err) is InvalidRequest
        and err.field == "key"
        and key.startswith("items/")
        and len(key) > len("items/")
    )


def error_result(err: TenureError) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=error_text(err))], is_error=True)


def reported(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """The tool ``fn``, answering a :class:`~tenure.TenureError` with a tool error result, its
    docstring dedented (the SDK sends ``__doc__`` as it is).

    ``functools.wraps`` keeps ``fn``'s signature, so the SDK derives the same input and output
    schemas from the wrapper; the SDK passes a returned ``CallToolResult`` through as it is.
    """

    @functools.wraps(fn)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except TenureError as err:
            return cast(R, error_result(err))

    tool.__doc__ = inspect.cleandoc(fn.__doc__ or "")  # the tool's description, dedented
    return tool
