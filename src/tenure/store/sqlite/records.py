"""Appending events on SQLite, and what SQLite gives the reads and writes both stores share
(:mod:`tenure.store.reads`, :mod:`tenure.store.writes`): a mixin of
:class:`tenure.store.sqlite.store.SqliteStore`."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from tenure.core.clock import Clock
from tenure.core.models import Event, EventDraft
from tenure.core.token_floor import TokenFloor
from tenure.store import rows
from tenure.store.compaction import Compaction
from tenure.store.reads import Reads
from tenure.store.sqlfiles import queries
from tenure.store.writes import Writes

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


class SqliteRecords(Reads, Writes, Compaction):
    clock: Clock
    NO_LIMIT: int | None = -1
    Q: Mapping[str, str] = queries("sqlite")

    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._write()

    def _now_in(self, cur: Any) -> int:
        return self.clock.now_ms()

    def _append(self, cur: Any, events: Sequence[EventDraft], now: int) -> list[Event]:
        return insert_events(cur, events, now)

    def _query_all(self, name: str, params: dict[str, Any]) -> list[Any]:
        return self._conn().execute(Q[name], params).fetchall()

    def _query_one(self, name: str, params: dict[str, Any]) -> Any:
        return self._conn().execute(Q[name], params).fetchone()

    def token_floor(self) -> TokenFloor:
        conn = self._conn()
        floor = conn.execute(Q["token_floor"]).fetchone()[0]
        return TokenFloor(int(floor), int(conn.execute(Q["max_token"]).fetchone()[0]))

    def auth_version(self) -> int:
        """Moves whenever a principal or a token changes (migration 0004's triggers)."""
        return int(self._conn().execute(Q["auth_version"]).fetchone()[0])
