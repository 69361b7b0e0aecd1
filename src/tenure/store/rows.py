"""Mapping between database rows and core models, shared by both backends."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring as _text  # what json.dumps writes for a str (C)
from typing import Any

from tenure.core.items import Item, Transfer
from tenure.core.models import Event, EventDraft, FencedValue, FencedWrite, KeyRecord, Principal

Loads = Callable[[Any], Any]


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
    return json.loads(value) if isinstance(value, str | bytes) else value


def record_from(row: Sequence[Any], loads: Loads = loads_text) -> KeyRecord:
    (
        key,
        token,
        holder,
        task,
        ttl_ms,
        acquired_at,
        renewed_at,
        expires_at,
        renewals,
        meta,
        ended,
        fence_open,
        conflicts,
        session,
    ) = row
    return KeyRecord(
        key,
        token,
        holder,
        task,
        ttl_ms,
        acquired_at,
        renewed_at,
        expires_at,
        renewals,
        loads(meta),
        ended,
        bool(fence_open),
        conflicts,
        session,
    )


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


def event_from(row: Sequence[Any], loads: Loads = loads_text) -> Event:
    id_, at, type_, key, holder, task, token, actor, reason, data = row
    return Event(id_, at, type_, key, holder, task, token, actor, reason, loads(data))


def register_from(row: Sequence[Any], loads: Loads = loads_text) -> FencedValue:
    key, token, value, version, updated_at = row
    return FencedValue(key, token, loads(value), version, updated_at)


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


def item_params(item: Item) -> dict[str, Any]:
    params = item.to_dict()
    params["stalled_epoch"] = item.stalled_epoch
    params["labels"] = dumps(list(item.labels))
    params["progress"] = None if item.progress is None else dumps(item.progress)
    params["result"] = dumps(item.result)
    return params


def item_from(row: Sequence[Any], loads: Loads = loads_text) -> Item:
    (
        id_,
        title,
        body,
        status,
        priority,
        labels,
        parent,
        assignee,
        epoch,
        progress,
        progress_at,
        result,
        created_by,
        created_at,
        updated_at,
        revoked,
        stalled_epoch,
    ) = row
    return Item(
        id_,
        title,
        body,
        status,
        priority,
        tuple(loads(labels)),
        parent,
        assignee,
        epoch,
        None if progress is None else loads(progress),
        progress_at,
        None if result is None else loads(result),
        created_by,
        created_at,
        updated_at,
        bool(revoked),
        stalled_epoch,
    )


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
    }


def transfer_from(row: Sequence[Any]) -> Transfer:
    return Transfer(*row)
