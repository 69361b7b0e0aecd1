"""Appending events on SQLite (with their ids)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tenure.core.models import Event, EventDraft
from tenure.store import rows
from tenure.store.sqlfiles import queries

Q = queries("sqlite")


def insert_event(conn: sqlite3.Connection, e: EventDraft, now: int) -> int:
    """Append ``e`` at ``now``; its id."""
    cur = conn.execute(Q["insert_event"], rows.event_params(e, now, rows.dumps(e.data)))
    assert cur.lastrowid is not None
    return cur.lastrowid


def insert_events(conn: sqlite3.Connection, events: Sequence[EventDraft], now: int) -> list[Event]:
    out = []
    for e in events:
        id_ = insert_event(conn, e, now)
        out.append(
            Event(id_, now, e.type, e.key, e.holder, e.task, e.token, e.actor, e.reason, e.data)
        )
    return out
