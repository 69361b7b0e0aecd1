"""Appending events on SQLite, refusals in windows (:mod:`tenure.store.retention`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tenure.core.models import EventDraft
from tenure.store.retention import coalesced, window_params
from tenure.store.sqlfiles import queries
from tenure.store.sqlite.records import insert_event

Q = queries("sqlite")


def append(conn: sqlite3.Connection, events: Sequence[EventDraft], now: int) -> None:
    """Append ``events`` at ``now`` (a refusal in an open window adds to its event)."""
    for event in events:
        if coalesced(event):
            record_conflict(conn, event, now)
        else:
            insert_event(conn, event, now)


def record_conflict(conn: sqlite3.Connection, event: EventDraft, now: int) -> None:
    params = window_params(event, now)
    row = conn.execute(Q["conflict_window"], params).fetchone()
    if row is not None and conn.execute(Q["repeat_conflict"], {**params, "id": row[0]}).rowcount:
        return
    params["event_id"] = insert_event(conn, event, now)
    conn.execute(Q["open_conflict_window"], params)
