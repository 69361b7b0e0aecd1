"""Words for people, shared by the CLI and the MCP tools: durations (``2m10s``), instants
relative to now (``in 28s``, ``12s ago``), holders (``jo (session web-1, task deploy-42)``)
and refusals in words that name what matters (:func:`describe`). Pure formatting: the current
instant comes from the system clock unless given."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from tenure import errors as e
from tenure.core.clock import SystemClock

#: how the CLI says an item is taken over (the MCP tools say it their way)
TAKEOVER = "claim with --takeover --reason … to take it over"


def format_duration(ms: int) -> str:
    """``2m10s``, ``1h5m``, ``3d2h``, ``450ms``: the two largest units."""
    ms = abs(int(ms))
    if ms < 1000:
        return f"{ms}ms"
    seconds = round(ms / 1000)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    while parts and parts[0][0] == 0:
        parts.pop(0)
    return "".join(f"{n}{u}" for n, u in parts[:2] if n) or "0s"


def relative(ms: int | None, now: int | None = None) -> str:
    """``in 2m10s`` or ``2m10s ago``."""
    if ms is None:
        return "-"
    delta = ms - (SystemClock().now_ms() if now is None else now)
    return f"in {format_duration(delta)}" if delta >= 0 else f"{format_duration(delta)} ago"


def clock(ms: int | None) -> str:
    """Local wall time: ``14:03:10`` today, ``2026-11-24 14:03:10`` another day."""
    if ms is None:
        return "-"
    moment = datetime.fromtimestamp(ms / 1000).astimezone()
    today = datetime.now().astimezone().date()
    return moment.strftime("%H:%M:%S" if moment.date() == today else "%Y-%m-%d %H:%M:%S")


def when(ms: int | None) -> str:
    """``14:03:10, in 2m10s``."""
    return "-" if ms is None else f"{clock(ms)}, {relative(ms)}"


def held_by(holder: str | None, session: str | None = None, task: str | None = None) -> str:
    """``jo``, ``jo (task deploy-42)``, ``jo (session cli:web-1:9f2c1a7b, task deploy-42)``: a
    holder with its session (unless the default one) and task."""
    details = [f"session {session}"] if session else []
    details += [f"task {task}"] if task else []
    return f"{holder} ({', '.join(details)})" if details else f"{holder}"


def held(err: e.LeaseHeld | e.NotHolder, at: Callable[[int], str], sessions: bool) -> str:
    """``items/42 held by jo/agent-3 (session mcp-1f2e, task fix-login) until 14:03:10``;
    ``src/a.py held through subtree src/ by jo …`` when another key's lease blocks it."""
    key = f"{err.key} " if err.key else ""
    holder = held_by(err.holder, err.session if sessions else None, err.task)
    left = f" until {at(err.expires_at)}" if err.expires_at else ""
    other = getattr(err, "held_key", None)
    holders = getattr(err, "holders", None)
    if holders:  # a semaphore's slots, all held
        first = f"; the first frees{left}" if left else ""
        slots = getattr(err, "slots", None) or len(holders)
        return f"{key}all {slots} slots held, by {', '.join(holders)}{first}".strip()
    if other and other != err.key:
        kind = "subtree" if getattr(err, "scope", None) == "subtree" else "key"
        return f"{key}held through {kind} {other} by {holder}{left}".strip()
    return f"{key}held by {holder}{left}".strip()


def assigned(err: e.AssignedToOther, at: Callable[[int], str], takeover: str) -> str:
    key = f"{err.key} " if err.key else ""
    if err.lease_state == "revoked":  # force-released: even its assignee takes it over
        return (
            f"{key}assigned to {err.assignee}, whose claim was force-released (revoked); {takeover}"
        ).strip()
    lapsed = f"; their lease lapsed at {at(err.lapsed_at)}" if err.lapsed_at else ""
    return f"{key}assigned to {err.assignee} (lease {err.lease_state}){lapsed}; {takeover}".strip()


def stale(err: e.StaleToken) -> str:
    key = f"{err.key} " if err.key else ""
    if err.token is not None and err.token == err.current_token:
        return f"{key}token {err.token} was revoked (force-released or cancelled)".strip()
    holder = f", held by {err.holder}" if err.holder else ""
    return f"{key}token {err.token} is stale: the current token is {err.current_token}{holder}"


def describe(
    err: e.TenureError,
    *,
    at: Callable[[int], str] = when,
    takeover: str = TAKEOVER,
    sessions: bool = False,
) -> str:
    """The error in words that name what matters. ``at`` words an instant (local wall time by
    default), ``takeover`` says how to take an item over (the MCP tools word both their way);
    ``sessions`` names the holder's session too (the CLI does)."""
    key = f"{err.key} " if err.key else ""
    if isinstance(err, e.LeaseHeld | e.NotHolder):
        return held(err, at, sessions)
    if isinstance(err, e.AssignedToOther):
        return assigned(err, at, takeover)
    if isinstance(err, e.StaleToken):
        return stale(err).strip()
    if isinstance(err, e.NotFound):
        return f"not found: {err.detail}"
    if isinstance(err, e.LeaseLost):
        return f"{key}lease lost ({err.reason or 'gone'})".strip()
    if isinstance(err, e.IdempotencyConflict):
        return (
            f"{key}op_id {err.op_id} was used for another write under token {err.token} "
            f"(version {err.version}): use a new op_id for a new write"
        ).strip()
    fields = ", ".join(f"{k} {v}" for k, v in err.info().items() if v is not None and k != "key")
    return f"{key}{err.detail}" + (f" ({fields})" if fields else "")
