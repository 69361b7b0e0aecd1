"""Mapping between database rows and core models, shared by both backends."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring as _text  # what json.dumps writes for a str (C)
from typing import Any

from tenure.core.items import Item, ItemCursor, ItemSummary, Transfer
from tenure.core.models import (
    Event,
    EventDraft,
    EventQuery,
    FencedValue,
    FencedWrite,
    KeyRecord,
    LostLease,
    Principal,
)
from tenure.core.validate import MAX_JSON_DEPTH, json_depth
from tenure.core.work import Failure
from tenure.store.values import Credential

Loads = Callable[[Any], Any]
log = logging.getLogger("tenure.store")
#: the deepest a stored column can nest: an accepted value (MAX_JSON_DEPTH) inside the store's
#: own wrapping (progress ``{"message", "data"}``, an event's data around it)
MAX_STORED_DEPTH = MAX_JSON_DEPTH + 4
#: what a read shows in place of a part of a stored value nested deeper than MAX_STORED_DEPTH
#: (only an older version could store one): the rest of the value, and every reply, still reads
TOO_DEEP = f"<not shown: nested deeper than {MAX_STORED_DEPTH} levels>"


def dumps(value: Any) -> str:
    if type(value) is dict:  # hot path: most meta is empty, most event data a few integers
        if not value:
            return "{}"
        if all(type(v) is int for v in value.values()) and all(type(k) is str for k in value):
            return "{" + ",".join(f"{_text(k)}:{v}" for k, v in value.items()) + "}"
    elif type(value) is list and not value:
        return "[]"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def loads_text(value: Any) -> Any:
    if value == "{}":  # most meta and roles are empty: hot path
        return {}
    if value == "[]":
        return []
    if not isinstance(value, str | bytes):
        return value
    if _brackets(value) <= MAX_STORED_DEPTH:  # too few to nest too deep: the common case
        return json.loads(value)
    try:
        loaded = json.loads(value)
    except RecursionError:
        log.warning("a stored JSON value nests too deep to read: shown as %r", {"": TOO_DEEP})
        return {"": TOO_DEEP}
    return clipped(loaded) if json_depth(loaded, MAX_STORED_DEPTH) > MAX_STORED_DEPTH else loaded


def _brackets(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"{") + text.count(b"[")
    return text.count("{") + text.count("[")


def clipped(value: Any) -> Any:
    """``value`` (as ``json.loads`` gave it) with each container nested deeper than
    :data:`MAX_STORED_DEPTH` levels replaced by :data:`TOO_DEEP` (logged), without recursion."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    cut = 0
    while stack:
        node, depth = stack.pop()
        if depth < MAX_STORED_DEPTH:
            children = node.values() if isinstance(node, dict) else node
            stack.extend([(c, depth + 1) for c in children if isinstance(c, dict | list)])
            continue
        for at, child in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(child, dict | list):
                node[at], cut = TOO_DEEP, cut + 1
    if cut:
        log.warning("a stored JSON value nests deeper than %d levels: %d parts shown as %r",
                    MAX_STORED_DEPTH, cut, TOO_DEEP)  # fmt: skip
    return value


def record_from(row: Sequence[Any], loads: Loads = loads_text) -> KeyRecord:
    """A lease row: key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at,
    renewals, meta, ended, fence_open, conflicts, session, scope (by index: the hot path)."""
    return KeyRecord(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                     loads(row[9]), row[10], bool(row[11]), row[12], row[13], row[14])  # fmt: skip


def record_params(rec: KeyRecord, meta: Any) -> dict[str, Any]:
    return {
        "key": rec.key,
        "token": rec.token,
        "holder": rec.holder,
        "task": rec.task,
        "ttl_ms": rec.ttl_ms,
        "acquired_at": rec.acquired_at,
        "renewed_at": rec.renewed_at,
        "expires_at": rec.expires_at,
        "renewals": rec.renewals,
        "meta": meta,
        "ended": rec.ended,
        "fence_open": rec.fence_open,
        "conflicts": rec.conflicts,
        "session": rec.session,
        "scope": rec.scope,
    }


def event_params(event: EventDraft, at: int, data: Any) -> dict[str, Any]:
    return {
        "at": at,
        "type": event.type,
        "key": event.key,
        "holder": event.holder,
        "task": event.task,
        "token": event.token,
        "actor": event.actor,
        "reason": event.reason,
        "data": data,
    }


MAX_EVENT_ID = (1 << 63) - 1


def item_cursor_params(after: ItemCursor | None) -> dict[str, Any]:
    """The ``:after_*`` parameters of ``list_items`` (all ``None``: from the first item)."""
    priority, at, item_id = after if after is not None else (None, None, None)
    return {"after_priority": priority, "after_at": at, "after_id": item_id}


def event_reading(query: EventQuery) -> tuple[str, dict[str, Any]]:
    """The query (by its name) that reads ``query`` along the index of its most selective
    filter, and its parameters."""
    params = {
        "after": query.after,
        "upto": MAX_EVENT_ID if query.upto is None else query.upto,
        "key": query.key,
        "holder": query.holder,
        "type": query.type,
        "token": query.token,
        "limit": query.limit,
    }
    for field in ("key", "holder", "type"):
        if params[field] is not None:
            return f"list_{field}_events", params
    return "list_events", params


def event_from(row: Sequence[Any], loads: Loads = loads_text) -> Event:
    id_, at, type_, key, holder, task, token, actor, reason, data = row
    return Event(id_, at, type_, key, holder, task, token, actor, reason, loads(data))


def register_from(row: Sequence[Any], loads: Loads = loads_text) -> FencedValue:
    key, token, value, version, updated_at = row
    return FencedValue(key, token, loads(value), version, updated_at)


def register_params(write: FencedWrite, now: int) -> dict[str, Any]:
    """The row of a fenced write's register (``now``: when it was written)."""
    value = dumps(write.value)
    return {"key": write.key, "token": write.token, "value": value, "version": write.version,
            "now": now}  # fmt: skip


def op_from(row: Sequence[Any], loads: Loads = loads_text) -> FencedWrite:
    key, token, value, version, writer = row
    return FencedWrite(key, token, loads(value), version, True, writer)


def principal_params(
    principal: Principal, now: int, dispatched_for: str | None = None
) -> dict[str, Any]:
    """The row of a new principal; ``dispatched_for``: the item a dispatched agent was made for
    (its tokens end with its claim on it)."""
    return {
        **principal.to_dict(),
        "roles": dumps(list(principal.roles)),
        "now": now,
        "dispatched_for": dispatched_for,
    }


def principal_from(row: Sequence[Any], loads: Loads = loads_text) -> Principal:
    name, kind, roles, parent = row
    return Principal(name, kind, tuple(loads(roles)), parent)


def credential_from(row: Sequence[Any], loads: Loads = loads_text) -> Credential:
    """A :class:`Credential` from a row of the ``token_by_hash`` query."""
    principal = principal_from(row[:4], loads)
    return Credential(principal, row[4], None if row[5] is None else int(row[5]))


def item_params(item: Item) -> dict[str, Any]:
    params = item.to_dict()
    params["stalled_epoch"] = item.stalled_epoch
    params["counted_epoch"] = item.counted_epoch
    params["failures"] = dumps([f.to_dict() for f in item.failures])
    params["labels"] = dumps(list(item.labels))
    params["progress"] = None if item.progress is None else dumps(item.progress)
    params["result"] = dumps(item.result)
    return params


def summary_from(row: Sequence[Any], loads: Loads = loads_text) -> ItemSummary:
    """A row of ``list_item_summaries``: an item's columns, its body's length, has a result."""
    return ItemSummary(item_from(row[:-2], loads), int(row[-2]), bool(row[-1]))


def item_from(row: Sequence[Any], loads: Loads = loads_text) -> Item:
    """An item row: id, title, body, status, priority, labels, parent, assignee, epoch,
    progress, progress_at, result, created_by, created_at, updated_at, revoked, stalled_epoch,
    attempts, failures, counted_epoch."""
    id_, title, body, status, priority, labels, parent, assignee, epoch, *rest = row
    progress, progress_at, result, created_by, created_at, updated_at, revoked, stalled = rest[:8]
    attempts, failures, counted = rest[8:]
    return Item(
        id_, title, body, status, priority, tuple(loads(labels)), parent, assignee, epoch,
        None if progress is None else loads(progress), progress_at,
        None if result is None else loads(result), created_by, created_at, updated_at,
        bool(revoked), stalled, attempts=attempts,
        failures=tuple(Failure.from_wire(f) for f in loads(failures)), counted_epoch=counted,
    )  # fmt: skip


def transfer_params(t: Transfer) -> dict[str, Any]:
    return {
        "item": t.item,
        "from_p": t.from_,
        "to_p": t.to,
        "epoch": t.epoch,
        "reason": t.reason,
        "actor": t.actor,
        "at": t.at,
        "note": t.note,
        "exit_status": t.exit_status,
    }


def transfer_from(row: Sequence[Any]) -> Transfer:
    return Transfer(*row)


def lapsed_of(found: Sequence[Sequence[Any]]) -> list[LostLease]:
    """The rows of ``lapsed_leases`` (key, token, why), by key (in code point order)."""
    lost = [LostLease(str(key), str(why), int(token)) for key, token, why in found]
    return sorted(lost, key=lambda x: x.key)
