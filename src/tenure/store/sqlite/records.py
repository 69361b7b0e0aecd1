"""Principals, tokens, items and cursors on SQLite, and appending events (a mixin of
:class:`tenure.store.sqlite.store.SqliteStore`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager

from tenure.core.clock import Clock
from tenure.core.items import Item, ItemCursor, ItemSummary, Transfer
from tenure.core.models import Event, EventDraft, Principal, token_event
from tenure.core.token_floor import TokenFloor, decide_floor
from tenure.store import principal_writes, rows
from tenure.store.base import ENDED, Credential, Removal, TokenInfo
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


class SqliteRecords:
    clock: Clock

    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def add_principal(
        self,
        principal: Principal,
        token_hash: str | None = None,
        token_id: str | None = None,
        actor: str | None = None,
        expires_at: int | None = None,
    ) -> None:
        token = None if token_hash is None else (token_hash, token_id, expires_at)
        with self._write() as conn:
            now = self.clock.now_ms()
            insert_events(conn, principal_writes.add(conn, Q, principal, token, actor, now), now)

    def add_token(
        self,
        name: str,
        token_id: str,
        token_hash: str,
        actor: str | None = None,
        expires_at: int | None = None,
    ) -> None:
        with self._write() as conn:
            now = self.clock.now_ms()
            events = principal_writes.add_token(conn, Q, name, token_id, token_hash, actor,
                                                expires_at, now)  # fmt: skip
            insert_events(conn, events, now)

    def revoke_token(
        self, name: str, token_id: str, actor: str | None = None, reason: str | None = None
    ) -> bool:
        with self._write() as conn:
            now = self.clock.now_ms()
            params = {"id": token_id, "principal": name, "now": now}
            if conn.execute(Q["revoke_token"], params).rowcount != 1:
                return False
            event = token_event("token_revoked", name, token_id, actor, reason)
            insert_events(conn, [event], now)
            return True

    def revoke_ended_agents(self, limit: int) -> list[Event]:
        with self._write() as conn:
            now = self.clock.now_ms()
            events = []
            for (name,) in conn.execute(Q["ended_agents"], {"now": now, "limit": limit}).fetchall():
                for (token_id,) in conn.execute(
                    Q["revoke_all_tokens"], {"name": name, "now": now}
                ).fetchall():
                    events.append(token_event("token_revoked", name, token_id, None, ENDED))
                conn.execute(Q["swept_agent"], {"name": name})
            return insert_events(conn, events, now)

    def token_floor(self) -> TokenFloor:
        conn = self._conn()
        floor = conn.execute(Q["token_floor"]).fetchone()[0]
        return TokenFloor(int(floor), int(conn.execute(Q["max_token"]).fetchone()[0]))

    def set_token_floor(self, floor: int, actor: str | None) -> TokenFloor:
        with self._write() as conn:
            event = decide_floor(int(conn.execute(Q["token_floor"]).fetchone()[0]), floor, actor)
            conn.execute(Q["set_token_floor"], {"floor": floor})
            insert_events(conn, [event], self.clock.now_ms())
            return TokenFloor(floor, int(conn.execute(Q["max_token"]).fetchone()[0]))

    def list_principals(self) -> list[Principal]:
        return [rows.principal_from(r) for r in self._conn().execute(Q["list_principals"])]

    def list_tokens(self, name: str) -> list[TokenInfo]:
        found = self._conn().execute(Q["list_tokens"], {"name": name}).fetchall()
        return principal_writes.tokens_from(found)

    def set_roles(self, name: str, roles: tuple[str, ...], actor: str | None) -> Principal | None:
        with self._write() as conn:
            principal, events = principal_writes.set_roles(conn, Q, name, roles, actor)
            insert_events(conn, events, self.clock.now_ms())
            return principal

    def remove_principal(self, name: str, actor: str | None) -> Removal | None:
        with self._write() as conn:
            now = self.clock.now_ms()
            removal, events = principal_writes.remove(conn, Q, name, actor, now)
            insert_events(conn, events, now)
            return removal

    def get_principal(self, name: str) -> Principal | None:
        row = self._conn().execute(Q["get_principal"], {"name": name}).fetchone()
        return rows.principal_from(row) if row else None

    def auth_version(self) -> int:
        """Moves whenever a principal or a token changes (migration 0004's triggers)."""
        return int(self._conn().execute(Q["auth_version"]).fetchone()[0])

    def principal_by_token(self, token_hash: str) -> Principal | None:
        found = self.token_by_hash(token_hash)
        return None if found is None or found.expired(self.clock.now_ms()) else found.principal

    def token_by_hash(self, token_hash: str) -> Credential | None:
        row = self._conn().execute(Q["token_by_hash"], {"token_hash": token_hash}).fetchone()
        return rows.credential_from(row) if row else None

    def create_item(self, item: Item) -> bool:
        with self._write() as conn:
            return conn.execute(Q["insert_item"], rows.item_params(item)).rowcount == 1

    def get_item(self, item_id: str) -> Item | None:
        row = self._conn().execute(Q["get_item"], {"id": item_id}).fetchone()
        return rows.item_from(row) if row else None

    def list_item_summaries(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
        after: ItemCursor | None = None,
    ) -> list[ItemSummary]:
        params = {"status": status, "assignee": assignee, "label": label, "limit": limit}
        params.update(rows.item_cursor_params(after))
        found = self._conn().execute(Q["list_item_summaries"], params)
        return [rows.summary_from(r) for r in found]

    def ready_item_summaries(self, now: int, limit: int) -> list[ItemSummary]:
        params = {"now": now, "limit": limit}
        found = self._conn().execute(Q["ready_item_summaries"], params)
        return [rows.summary_from(r) for r in found]

    def list_items(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
        after: ItemCursor | None = None,
    ) -> list[Item]:
        params = {"status": status, "assignee": assignee, "label": label, "limit": limit}
        params.update(rows.item_cursor_params(after))
        return [rows.item_from(r) for r in self._conn().execute(Q["list_items"], params)]

    def stalled_claims(self, now: int, before: int, limit: int) -> list[str]:
        params = {"now": now, "before": before, "limit": limit}
        return [r[0] for r in self._conn().execute(Q["stalled_claims"], params)]

    def count_stalled(self, now: int) -> int:
        return int(self._conn().execute(Q["count_stalled"], {"now": now}).fetchone()[0])

    def ready_items(self, now: int, limit: int) -> list[Item]:
        params = {"now": now, "limit": limit}
        return [rows.item_from(r) for r in self._conn().execute(Q["ready_items"], params)]

    def transfers(self, item_id: str) -> list[Transfer]:
        cur = self._conn().execute(Q["list_transfers"], {"item": item_id})
        return [rows.transfer_from(r) for r in cur]

    def get_cursor(self, principal: str, name: str) -> int:
        row = self._conn().execute(Q["get_cursor"], {"principal": principal, "name": name})
        found = row.fetchone()
        return int(found[0]) if found else 0

    def set_cursor(self, principal: str, name: str, event_id: int) -> None:
        with self._write() as conn:
            params = {"principal": principal, "name": name, "event_id": event_id}
            conn.execute(Q["set_cursor"], params)
