"""A write transaction on SQLite: one key's (:class:`SqliteKeyTx`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import cache
from typing import Any

from tenure.core.items import Item
from tenure.core.models import EventDraft, FencedValue, FencedWrite, KeyRecord
from tenure.core.subtree import ancestors, upper_bound
from tenure.store import keytx, rows
from tenure.store.sqlfiles import queries
from tenure.store.sqlite import conflicts as sqlite_conflicts
from tenure.store.values import Reach

Q = queries("sqlite")


@cache
def _above(n: int) -> str:
    """``nearby_subtrees`` for ``n`` prefixes (positional parameters: a list of placeholders
    reads faster than a JSON array through ``json_each``)."""
    return Q["nearby_subtrees"].replace("(:prefixes)", "(" + ", ".join("?" * n) + ")")


class SqliteKeyTx(keytx.KeyTx):
    def __init__(
        self, conn: sqlite3.Connection, key: str, now: int, reach: Reach | None = None
    ) -> None:
        self.conn, self.key, self.now, self.reach = conn, key, now, reach
        self.subtrees = False  # an unended subtree lease exists (read for an acquisition)
        if reach is None:
            row = conn.execute(Q["get_lease"], {"key": key}).fetchone()
            self.record: KeyRecord | None = rows.record_from(row) if row else None
            return
        row = conn.execute(Q["get_lease_to_acquire"], {"key": key}).fetchone()
        self.record = rows.record_from(row) if row[0] is not None else None
        self.subtrees = bool(row[15])

    def nearby(self) -> list[KeyRecord]:
        """Read in the transaction, under SQLite's write lock: nothing else writes meanwhile.
        While no subtree lease is unended, a plain key's acquisition reads nothing more."""
        reach = self.reach
        if reach is None:
            return []
        found = []
        above = ancestors(self.key) if self.subtrees else ()
        if above:
            read = self.conn.execute(_above(len(above)), above)
            found = [rows.record_from(r) for r in read]
        if reach.scope == "subtree":
            params = {"prefix": self.key, "upper": upper_bound(self.key), **reach._asdict()}
            found += [rows.record_from(r) for r in self.conn.execute(Q["nearby_under"], params)]
        return found

    def write(self, name: str, params: dict[str, Any]) -> None:
        self.conn.execute(Q[name], params)

    def read(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(Q[name], params).fetchone()
        return row

    def live_leases(self, holder: str, cap: int) -> int:
        params = {"holder": holder, "now": self.now, "cap": cap}
        return int(self.conn.execute(Q["count_live_leases"], params).fetchone()[0])

    def live_agents(self, parent: str, cap: int) -> int:
        params = {"parent": parent, "now": self.now, "cap": cap}
        return int(self.conn.execute(Q["count_live_agents"], params).fetchone()[0])

    def token_floor(self) -> int:
        floor, retired = self.conn.execute(Q["token_floor"]).fetchone()
        return int(floor) if self.record is not None else max(int(floor), int(retired))

    def register(self) -> FencedValue | None:
        row = self.conn.execute(Q["get_register"], {"key": self.key}).fetchone()
        return rows.register_from(row) if row else None

    def find_op(self, token: int, op_id: str) -> FencedWrite | None:
        params = {"key": self.key, "token": token, "op_id": op_id}
        row = self.conn.execute(Q["find_op"], params).fetchone()
        return rows.op_from(row) if row else None

    def save(self, record: KeyRecord) -> None:
        params = rows.record_params(record, rows.dumps(record.meta))
        params["fence_open"] = int(record.fence_open)
        if self.conn.execute(Q["save_lease"], params).rowcount != 1:
            raise RuntimeError(f"refused to lower the token of {record.key!r}")

    def append(self, events: Sequence[EventDraft]) -> None:
        sqlite_conflicts.append(self.conn, events, self.now)  # (no Event objects: hot path)

    def item(self, item_id: str) -> Item | None:
        row = self.conn.execute(Q["get_item"], {"id": item_id}).fetchone()
        return rows.item_from(row) if row else None

    def add_item(self, item: Item) -> bool:
        return self.conn.execute(Q["add_item"], rows.item_params(item)).fetchone() is not None

    def save_item(self, item: Item) -> None:
        self.conn.execute(Q["save_item"], rows.item_params(item))

    def find_item_op(self, item_id: str, op_id: str) -> Any:
        row = self.conn.execute(Q["find_item_op"], {"item": item_id, "op_id": op_id}).fetchone()
        return None if row is None else rows.loads_text(row[0])
