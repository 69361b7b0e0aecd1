"""The store's writes of principals, tokens, the token floor, items and cursors (part of
:class:`tenure.store.base.Store`), the same on every backend.

Each is one transaction of the connector (``writing()``: SQLite's write lock, or a PostgreSQL
transaction) whose statements run on its cursor (sqlite3's connection or psycopg's cursor,
which read alike: :mod:`tenure.store.principal_writes`), and whose events are appended in it
(``append``: on PostgreSQL also the notices for other servers).
"""

from __future__ import annotations

from typing import Any

from tenure.core.items import Item
from tenure.core.models import Event, Principal, token_event
from tenure.core.token_floor import TokenFloor, decide_floor, floor_from_clock
from tenure.store import principal_writes, rows
from tenure.store.connector import Connector
from tenure.store.values import ENDED, NewToken, Removal


class Writes:
    connector: Connector

    def add_principal(
        self, principal: Principal, token: NewToken | None = None, actor: str | None = None
    ) -> None:
        """Create ``principal`` (and, given ``token``, its first token) in one transaction, with
        its events (``principal_created``, ``token_issued``; ``actor`` made it)."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            self.connector.append(
                cur, principal_writes.add(cur, self.connector.Q, principal, token, actor, now), now
            )

    def add_token(self, name: str, token: NewToken, actor: str | None = None) -> None:
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            self.connector.append(
                cur, principal_writes.add_token(cur, self.connector.Q, name, token, actor, now), now
            )

    def add_signin_code(self, name: str, code_hash: str, expires_at: int) -> None:
        """Record a one-time sign-in code of ``name`` (its hash), dropping the codes that
        expired a day ago or more."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            cur.execute(self.connector.Q["prune_signin_codes"], {"before": now - 86_400_000})
            row = {"code_hash": code_hash, "principal": name, "now": now}
            cur.execute(self.connector.Q["add_signin_code"], {**row, "expires_at": expires_at})

    def redeem_signin_code(self, code_hash: str, token: NewToken) -> str | None:
        """Trade a sign-in code, once and before it expires, for ``token`` of its principal
        (one statement marks it used); the principal's name, or ``None`` (unknown, used,
        expired, or its principal removed)."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            found = cur.execute(
                self.connector.Q["redeem_signin_code"], {"code_hash": code_hash, "now": now}
            )
            row = found.fetchone()
            if row is None:
                return None
            name = str(row[0])
            self.connector.append(
                cur, principal_writes.add_token(cur, self.connector.Q, name, token, name, now), now
            )
            return name

    def revoke_token(
        self, name: str, token_id: str, actor: str | None = None, reason: str | None = None
    ) -> bool:
        """Revoke a token of ``name`` (and record ``token_revoked``); ``False`` if it has no
        such unrevoked token. When it was the last token of ``name`` that authenticates, its
        live leases are force-released in the same transaction (``credentials_revoked``)."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            params = {"id": token_id, "principal": name, "now": now}
            if cur.execute(self.connector.Q["revoke_token"], params).rowcount != 1:
                return False
            events = [token_event("token_revoked", name, token_id, actor, reason)]
            if not principal_writes.has_valid_token(cur, self.connector.Q, name, now):
                ended = principal_writes.CREDENTIALS_REVOKED
                events += principal_writes.end_leases(
                    cur, self.connector.Q, name, now, actor, ended
                )
            self.connector.append(cur, events, now)
            return True

    def revoke_ended_agents(self, limit: int) -> list[Event]:
        """Revoke the tokens of dispatched agents whose claim on their item ended (released,
        completed, expired, force-released, taken over: whatever way, ``kill -9`` of their
        supervisor included); the ``token_revoked`` events."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            events = []
            ended = cur.execute(
                self.connector.Q["ended_agents"], {"now": now, "limit": limit}
            ).fetchall()
            for (name,) in ended:
                revoked = cur.execute(
                    self.connector.Q["revoke_all_tokens"], {"name": name, "now": now}
                )
                for (token_id,) in revoked.fetchall():
                    events.append(token_event("token_revoked", name, token_id, None, ENDED))
                cur.execute(self.connector.Q["swept_agent"], {"name": name, "now": now})
            return self.connector.append(cur, events, now)

    def set_token_floor(self, floor: int, actor: str | None) -> TokenFloor:
        """Raise the token floor to ``floor`` (refused if lower: floors only grow), recorded as
        ``token_floor_set``; in one transaction."""
        with self.connector.writing() as cur:
            row = cur.execute(self.connector.Q["token_floor_for_update"]).fetchone()
            event = decide_floor(int(row[0]) if row else 0, floor, actor)
            cur.execute(self.connector.Q["set_token_floor"], {"floor": floor})
            self.connector.append(cur, [event], self.connector.now_in(cur))
            most = cur.execute(self.connector.Q["max_token"]).fetchone()
            return TokenFloor(floor, int(most[0]) if most else 0)

    def raise_token_floor(self, reason: str) -> TokenFloor:
        """Raise the token floor to the store's instant in microseconds, unless it is that high
        already or the database never granted a token (a new database: its tokens start at 1)
        (:func:`tenure.core.token_floor.floor_from_clock`), recorded as ``token_floor_set``
        with ``reason``; in one transaction."""
        with self.connector.writing() as cur:
            return raise_floor_in(self.connector, cur, reason)

    def set_roles(self, name: str, roles: tuple[str, ...], actor: str | None) -> Principal | None:
        """Replace the roles of ``name`` and record ``principal_roles_set`` (from, to; ``actor``
        did it); ``None`` if there is no such principal."""
        with self.connector.writing() as cur:
            principal, events = principal_writes.set_roles(
                cur, self.connector.Q, name, roles, actor
            )
            self.connector.append(cur, events, self.connector.now_in(cur))
            return principal

    def remove_principal(self, name: str, actor: str | None) -> Removal | None:
        """In one transaction: unless ``name`` is assigned an open item or dispatched a principal,
        force-release its live leases (``principal_removed``), revoke its live tokens
        (``token_revoked``), delete it, its tokens and its event cursors, and record
        ``principal_removed``. ``None`` if there is no such principal."""
        with self.connector.writing() as cur:
            now = self.connector.now_in(cur)
            removal, events = principal_writes.remove(cur, self.connector.Q, name, actor, now)
            self.connector.append(cur, events, now)
            return removal

    def create_item(self, item: Item) -> bool:
        """Insert ``item``; ``False`` if its id is taken."""
        with self.connector.writing() as cur:
            return (
                cur.execute(self.connector.Q["add_item"], rows.item_params(item)).fetchone()
                is not None
            )

    def set_cursor(self, principal: str, name: str, event_id: int) -> None:
        with self.connector.writing() as cur:
            params = {"principal": principal, "name": name, "event_id": event_id}
            cur.execute(self.connector.Q["set_cursor"], params)

    def set_session_task(self, principal: str, session: str, task: str) -> None:
        """Name the task of ``principal``'s ``session``, unless it has one already."""
        with self.connector.writing() as cur:
            params = {"principal": principal, "session": session, "task": task}
            cur.execute(
                self.connector.Q["set_session_task"], {**params, "now": self.connector.now_in(cur)}
            )

    def end_session_task(self, principal: str, session: str) -> None:
        """Forget the task of ``principal``'s ``session`` (it ended)."""
        with self.connector.writing() as cur:
            params = {"principal": principal, "session": session}
            cur.execute(self.connector.Q["end_session_task"], params)


def raise_floor_in(connector: Connector, cur: Any, reason: str) -> TokenFloor:
    """:meth:`Writes.raise_token_floor` in the open write transaction of ``cur`` (PostgreSQL
    raises it so on a new connection that reached another database)."""
    now = connector.now_in(cur)
    row = cur.execute(connector.Q["token_floor_for_update"]).fetchone()
    floor = int(row[0]) if row else 0
    most = cur.execute(connector.Q["max_token"]).fetchone()
    granted = int(most[0]) if most else 0
    event = floor_from_clock(floor, now, reason) if granted else None
    if event is not None:
        floor = event.data["to"]
        cur.execute(connector.Q["set_token_floor"], {"floor": floor})
        connector.append(cur, [event], now)
    return TokenFloor(floor, granted)
