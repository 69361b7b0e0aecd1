"""Refusals as MCP tool errors: ``isError`` results whose text is ``code: facts. What to do.``,
instants in UTC with the time since or until them. Never the SDK's bare "Error executing tool",
never pydantic's text.

What to do depends on who asks (:class:`Asker`) and, for a refusal about an item, on the item as
it is now (its view, read after the refusal): a stale epoch from the agent that holds the item
under a newer one is told that epoch; a finished item names who finished it and when. A lock's
refusal talks about locks, an item's about items. Arguments that do not fit a tool's schema are
refused by :func:`arguments_refused`, naming each field and the arguments the tool takes."""

from __future__ import annotations

import difflib
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar, cast

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from tenure.core.items import ITEM_PREFIX, ItemView
from tenure.core.text import describe, held, relative
from tenure.errors import (
    AssignedToOther,
    Conflict,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    NotHolder,
    StaleToken,
    TenureError,
    TooLarge,
)

P = ParamSpec("P")
R = TypeVar("R")

TAKEOVER = (
    "to take it over call claim with takeover=true and a reason, only if you know they stopped"
)
#: one policy on waiting, as the claim tool's description says
ITEM_HELD = (
    "Someone else (or another session of yours: another connection or agent with your token) "
    "is working on it. Do not wait on a held item: pick another (tool ready); come back later "
    "only if nothing else is ready. Do not take it over."
)
LOCK_HELD = (
    "Someone else (or another session of yours: another connection or agent with your token) "
    "holds this lock: wait for it (it frees at the latest when it expires, unless renewed) or "
    "use another key. Do not force it."
)
NEXT_STEP: dict[str, str] = {
    "assigned_to_other": "Prefer another item (tool ready).",
    "stale_token": "Your claim was replaced: stop this work, do not send this epoch again, and "
    "look at the item (tool show_item).",
    "not_holder": "You do not hold it: leave it alone.",
    "not_found": "Check the id (tools ready, queue, show_item, list_leases).",
    "invalid_request": "Fix the argument named and call again.",
    "too_large": "Send less and call again.",
    "unauthenticated": "The token is missing, unknown or revoked.",
    "transport_error": "The tenure server did not answer: try again shortly.",
    "quota_exceeded": "Do not call again at once: release the locks you no longer need, wait for "
    "your agents to end (or, for new items, for the next minute); tell the user if it goes on.",
}
ITEM_LOST = (
    "Your claim is gone: claim the item again (tool claim) to go on, and check (tool show_item) "
    "whether someone else did the work meanwhile."
)
LOCK_LOST = (
    "Your lock is gone: acquire it again (tool acquire_lock) before going on, and check whether "
    "someone else changed what it guards meanwhile."
)
REVOKED_STEP = (
    "Do not claim it again, not even with takeover: ask whoever stopped it (tool show_item: "
    "its force_released transfer names them and why), or wait until it is reassigned."
)
ITEM_TOOLS = (
    "use the item tools with item_id={id} instead (claim, renew, extend, release, progress, "
    "complete; force_release with item_id)"
)
YOURS = (
    "The holder is you, in another session (another connection or agent with your token): "
    "this session cannot use what that one holds."
)
NOTHING_LEFT = "There is nothing left to do on it: do not renew, extend or claim it again."


@dataclass(frozen=True)
class Asker:
    """Who called the tool that was refused: a principal in one session."""

    name: str
    session: str


def utc(ms: int | None) -> str:
    """``14:03:10Z, in 28s`` today (UTC), else ``2026-11-24T14:03:10Z, 2d ago``: the tense of
    the time since or until follows the clock."""
    if ms is None:
        return "-"
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    today = moment.date() == datetime.now(UTC).date()
    return f"{moment.strftime('%H:%M:%SZ' if today else '%Y-%m-%dT%H:%M:%SZ')}, {relative(ms)}"


def is_past(ms: int) -> bool:
    return relative(ms).endswith(" ago")


def since(ms: int) -> str:
    """An instant of the past (a lapse, a completion): ``14:03:10Z, 12s ago``, never "in 4s"
    (a clock ahead of this one: then the instant alone)."""
    return utc(ms) if is_past(ms) else utc(ms).split(", ")[0]


def until(ms: int) -> str:
    """An instant to come (a deadline): ``14:03:10Z, in 28s``, never "ago" (then alone)."""
    return utc(ms) if not is_past(ms) else utc(ms).split(", ")[0]


def is_item(err: TenureError) -> bool:
    return (err.key or "").startswith(ITEM_PREFIX)


def finished(view: ItemView, asker: Asker | None) -> str | None:
    """``items/x is done: completed by you (jo/a1) at 14:03:10Z, 12s ago`` for a done or
    cancelled item, naming who finished it and when; else ``None``."""
    item = view.item
    if item.status not in ("done", "cancelled"):
        return None
    verb = "completed" if item.status == "done" else "cancelled"
    last = next((t for t in reversed(view.transfers) if t.reason == verb), None)
    by, at = (last.actor, last.at) if last is not None else (item.assignee, item.updated_at)
    who = f"you ({by})" if asker is not None and by == asker.name else str(by or "someone")
    why = f" ({last.note})" if last is not None and last.note else ""
    return f"{ITEM_PREFIX}{item.id} is {item.status}: {verb} by {who} at {since(at)}{why}"


def newer(err: StaleToken | LeaseLost, asker: Asker | None, view: ItemView | None) -> str | None:
    """The epoch under which the asker (this very session) holds the item now, if it is not
    the one it sent."""
    lease = view.lease if view is not None else None
    mine = (
        asker is not None
        and lease is not None
        and lease.state == "live"
        and lease.holder == asker.name
        and lease.session == asker.session
    )
    return str(lease.token) if mine and lease is not None and lease.token != err.token else None


def stale(err: StaleToken, asker: Asker | None, view: ItemView | None) -> tuple[str, str]:
    """The words and the step of a stale epoch, from who asks and the item as it is now."""
    key = f"{err.key} " if err.key else ""
    if err.current_token is None:
        words = f"{key}epoch {err.token} was never issued: the item has no claim"
        return words, "Claim it first (tool claim) and send the epoch the claim returns."
    return describe(err, at=utc), NEXT_STEP["stale_token"]


def words_and_step(
    err: TenureError, asker: Asker | None, view: ItemView | None
) -> tuple[str, str | None]:
    """What happened, and what to do about it."""
    done = finished(view, asker) if view is not None else None
    if done is not None and isinstance(err, StaleToken | LeaseLost | Conflict):
        return done, NOTHING_LEFT
    if isinstance(err, Conflict) and err.field == "status":
        return err.detail, NOTHING_LEFT  # "item 'x' is done"
    if isinstance(err, StaleToken | LeaseLost) and (epoch := newer(err, asker, view)):
        key = f"{err.key} " if err.key else ""
        words = f"{key}epoch {err.token} is not your claim's: you hold it under epoch {epoch}"
        return words, f"Use epoch {epoch} (your live claim) and call again."
    if isinstance(err, StaleToken):
        return stale(err, asker, view)
    if isinstance(err, LeaseHeld | NotHolder):
        return held(err, until, sessions=True), held_step(err, asker)
    if isinstance(err, LeaseLost):
        return describe(err, at=utc), ITEM_LOST if is_item(err) else LOCK_LOST
    if isinstance(err, AssignedToOther):
        return assigned(err)
    if item_key_refused(err):
        assert err.key is not None
        item = err.key.split("/", 1)[1]
        words = f"key {err.key} is the claim of item {item!r}: the lock tools take no item keys"
        return words, ITEM_TOOLS.replace("{id}", item).capitalize() + "."
    field = err.field if isinstance(err, InvalidRequest | TooLarge) else None
    if field and err.detail.startswith(f"{field}: "):  # the field named once, not twice
        return f"field {err.detail}", NEXT_STEP.get(err.code)
    return describe(err, at=utc, takeover=TAKEOVER), NEXT_STEP.get(err.code)


def held_step(err: LeaseHeld | NotHolder, asker: Asker | None) -> str:
    """What to do about a lease someone else holds: leave an item for another, wait for a lock
    or use another key; said to be yours when the holder is you in another session."""
    step = NEXT_STEP["not_holder"] if isinstance(err, NotHolder) else ITEM_HELD
    step = LOCK_HELD if isinstance(err, LeaseHeld) and not is_item(err) else step
    return f"{YOURS} {step}" if asker is not None and err.holder == asker.name else step


def assigned(err: AssignedToOther) -> tuple[str, str]:
    key = f"{err.key} " if err.key else ""
    if err.lease_state == "revoked":
        words = (
            f"{key}assigned to {err.assignee}, its claim revoked: an authority force-released "
            "it and stopped the work on purpose"
        )
        return words, f"{REVOKED_STEP} Meanwhile pick another item (tool ready)."
    ended = f"; their lease lapsed at {since(err.lapsed_at)}" if err.lapsed_at else ""
    words = f"{key}assigned to {err.assignee} (lease {err.lease_state}){ended}; {TAKEOVER}"
    return words, NEXT_STEP["assigned_to_other"]


def error_text(err: TenureError, asker: Asker | None = None, view: ItemView | None = None) -> str:
    """``lease_held: items/42 held by jo/agent-3 (session mcp-1f2e, task fix-login) until
    14:03:10Z, in 28s. Someone else … is working on it. …``."""
    words, step = words_and_step(err, asker, view)
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
        and key.startswith(ITEM_PREFIX)
        and len(key) > len(ITEM_PREFIX)
    )


def refusal(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def error_result(err: TenureError, step: str | None = None) -> CallToolResult:
    text = error_text(err)
    return refusal(f"{text} {step}" if step else text)


class Told(Exception):
    """A refusal already worded for whoever asked (raised out of the worker thread)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def compact(out: BaseModel) -> CallToolResult:
    """A tool's reply: ``structuredContent`` and, as its text, the same JSON without spaces."""
    data = out.model_dump(mode="json", by_alias=True)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def reported(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """The tool ``fn``, its reply compact JSON, a refusal a tool error result, its docstring
    dedented (the SDK sends ``__doc__`` as it is).

    ``functools.wraps`` keeps ``fn``'s signature, so the SDK derives the same input and output
    schemas from the wrapper; the SDK passes a returned ``CallToolResult`` through as it is
    (checking ``structuredContent`` against the output schema).
    """

    @functools.wraps(fn)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            out = await fn(*args, **kwargs)
        except Told as told:
            return cast(R, refusal(told.text))
        except TenureError as err:
            return cast(R, error_result(err))
        return cast(R, compact(out)) if isinstance(out, BaseModel) else out

    tool.__doc__ = inspect.cleandoc(fn.__doc__ or "")  # the tool's description, dedented
    return tool


# arguments that do not fit the schema -----------------------------------------------------------
MAX_SHOWN = 40


def shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


KINDS = {
    "int": "an integer",
    "string": "a string",
    "bool": "true or false",
    "dict": "a JSON object",
    "model": "a JSON object",
    "list": "an array",
    "float": "a number",
}


def why(error: Any) -> str:
    """One pydantic error in the house's words: ``must be at most 600000 (got 900000)``."""
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    bounds = {
        "less_than_equal": ("at most", "le"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "greater_than": ("more than", "gt"),
    }
    if kind in bounds:
        word, name = bounds[kind]
        return f"must be {word} {ctx.get(name)} (got {shown(given)})"
    if kind == "string_too_long":
        size = len(given) if isinstance(given, str) else "?"
        return f"must be at most {ctx.get('max_length')} characters (got {size})"
    if kind == "string_too_short":
        return (
            "must not be empty"
            if ctx.get("min_length") == 1
            else (f"must be at least {ctx.get('min_length')} characters")
        )
    if kind in ("too_long", "too_short"):
        word, name = ("at most", "max_length") if kind == "too_long" else ("at least", "min_length")
        return f"must have {word} {ctx.get(name)} items (got {ctx.get('actual_length')})"
    if kind == "missing":
        return "is required"
    base = kind.split("_", 1)[0]
    if base in KINDS:
        return f"must be {KINDS[base]} (got {shown(given)})"
    return str(error.get("msg", "is invalid")).replace("Input should be", "must be")


def place(loc: tuple[Any, ...]) -> str:
    """``follow_ups[1].title`` for the location ``("follow_ups", 1, "title")``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def arguments_refused(tool: str, schema: dict[str, Any], exc: ValidationError) -> str:
    """``invalid_request: field ttl_ms: must be at most 600000 (got 900000). claim takes:
    item_id (required), ttl_ms, …. Send …``: each argument at fault, and what the tool takes."""
    names = list(schema.get("properties", {}))
    required = set(schema.get("required", []))
    takes = ", ".join(f"{n} (required)" if n in required else n for n in names) or "nothing"
    faults: list[str] = []
    for error in exc.errors(include_url=False)[:5]:
        where = place(tuple(error["loc"]))
        if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
            near = difflib.get_close_matches(where, names, n=1)
            faults.append(
                f"unknown field {where}" + (f" (did you mean {near[0]}?)" if near else "")
            )
        elif error["type"] == "extra_forbidden":
            faults.append(f"field {where}: unknown field")
        else:
            faults.append(f"field {where}: {why(error)}")
    return (
        f"invalid_request: {'; '.join(faults)}. {tool} takes {takes}. Send only those, of the "
        "types and within the limits of its input schema, and call again: nothing was done."
    )
