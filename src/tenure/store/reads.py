"""The store's reads (part of :class:`tenure.store.base.Store`), the same on every backend:
each is one named query of the backend's ``queries.sql`` run by its connector
(:mod:`tenure.store.connector`), its rows mapped by :mod:`tenure.store.rows`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tenure.core.items import Item, ItemQuery, ItemSummary, Transfer
from tenure.core.models import (
    Event,
    EventQuery,
    FencedValue,
    KeyRecord,
    LeaseQuery,
    Principal,
)
from tenure.store import principal_writes, rows
from tenure.store.connector import Connector
from tenure.store.values import Credential, TokenInfo

Row = Sequence[Any]


def _int(row: Row | None) -> int:
    return int(row[0]) if row and row[0] is not None else 0


def _item_page(query: ItemQuery) -> dict[str, Any]:
    """The parameters of ``list_items`` and ``list_item_summaries``."""
    params = {"status": query.status, "assignee": query.assignee, "label": query.label}
    return {**params, "limit": query.limit, **rows.item_cursor_params(query.after)}


class Reads:
    connector: Connector

    def _query_all(self, name: str, params: dict[str, Any]) -> Sequence[Row]:
        return self.connector.query_all(name, params)

    def _query_one(self, name: str, params: dict[str, Any]) -> Row | None:
        return self.connector.query_one(name, params)

    def now_ms(self) -> int:
        return self.connector.now_ms()

    def get(self, key: str) -> KeyRecord | None:
        row = self._query_one("get_lease", {"key": key})
        return rows.record_from(row) if row else None

    def live(self, now: int, query: LeaseQuery) -> list[KeyRecord]:
        """The leases ``query`` selects that are live at ``now`` (or, by ``query.state``, that
        ended), by key."""
        limit = self.connector.NO_LIMIT if query.limit is None else query.limit
        params = {"now": now, "prefix": query.prefix or None, "holder": query.holder}
        params.update(task=query.task, after=query.after, limit=limit)
        if query.state != "live":  # the ended ones: a list to look at, not a hot path
            params["state"] = query.state
            return [rows.record_from(r) for r in self._query_all("ended_leases", params)]
        name, upper = "live_leases", prefix_end(query.prefix)
        if upper is not None:  # the keys under it are one range of the primary key
            name, params["upper"] = "live_leases_under", upper
        return [rows.record_from(r) for r in self._query_all(name, params)]

    def read_register(self, key: str) -> FencedValue | None:
        row = self._query_one("get_register", {"key": key})
        return rows.register_from(row) if row else None

    def events(self, query: EventQuery) -> list[Event]:
        name, params = rows.event_reading(query)
        return [rows.event_from(r) for r in self._query_all(name, params)]

    def next_deadline(self) -> int | None:
        """The earliest deadline of a lease whose end is not yet recorded."""
        row = self._query_one("next_deadline", {})
        return None if row is None or row[0] is None else int(row[0])

    def list_principals(self) -> list[Principal]:
        return [rows.principal_from(r) for r in self._query_all("list_principals", {})]

    def list_tokens(self, name: str) -> list[TokenInfo]:
        """Every token of ``name``, revoked ones included, oldest first."""
        return principal_writes.tokens_from(self._query_all("list_tokens", {"name": name}))

    def semaphore_slots(self, keys: Sequence[str]) -> dict[str, int]:
        """The number of slots of each semaphore of ``keys`` the store has seen."""
        found = {k: self._query_one("semaphore_slots", {"key": k}) for k in set(keys)}
        return {k: int(row[0]) for k, row in found.items() if row is not None}

    def live_token_ids(self) -> set[str]:
        """The ids of every unrevoked token (expired ones included)."""
        return {str(r[0]) for r in self._query_all("live_token_ids", {})}

    def get_principal(self, name: str) -> Principal | None:
        row = self._query_one("get_principal", {"name": name})
        return rows.principal_from(row) if row else None

    def principal_by_token(self, token_hash: str) -> Principal | None:
        """The principal of an unrevoked, unexpired token (at :meth:`now_ms`)."""
        found = self.token_by_hash(token_hash)
        if found is None or (found.expires_at is not None and found.expired(self.now_ms())):
            return None
        return found.principal

    def token_by_hash(self, token_hash: str) -> Credential | None:
        """The unrevoked token of ``token_hash``, expired or not."""
        row = self._query_one("token_by_hash", {"token_hash": token_hash})
        return rows.credential_from(row) if row else None

    def signin_code_open(self, code_hash: str, now: int) -> bool:
        """Whether the sign-in code of ``code_hash`` is unused and unexpired at ``now``."""
        params = {"code_hash": code_hash, "now": now}
        return self._query_one("signin_code_open", params) is not None

    def get_item(self, item_id: str) -> Item | None:
        row = self._query_one("get_item", {"id": item_id})
        return rows.item_from(row) if row else None

    def list_items(self, query: ItemQuery) -> list[Item]:
        """The items ``query`` selects, by priority, then age, then id."""
        return [rows.item_from(r) for r in self._query_all("list_items", _item_page(query))]

    def list_item_summaries(self, query: ItemQuery) -> list[ItemSummary]:
        """:meth:`list_items` as summaries: bodies, results and progress data stay in the
        database."""
        found = self._query_all("list_item_summaries", _item_page(query))
        return [rows.summary_from(r) for r in found]

    def ready_items(self, now: int, limit: int) -> list[Item]:
        return [
            rows.item_from(r) for r in self._query_all("ready_items", {"now": now, "limit": limit})
        ]

    def ready_item_summaries(self, now: int, limit: int) -> list[ItemSummary]:
        params = {"now": now, "limit": limit}
        return [rows.summary_from(r) for r in self._query_all("ready_item_summaries", params)]

    def stalled_claims(self, now: int, before: int, limit: int) -> list[str]:
        """The items of live claims idle (no acquisition, no progress) since ``before`` whose
        stall is not recorded yet."""
        params = {"now": now, "before": before, "limit": limit}
        return [r[0] for r in self._query_all("stalled_claims", params)]

    def lapsed_claims(self, now: int, limit: int) -> list[str]:
        """The items whose claim lapsed (its holder still the assignee) and whose failure is
        not counted yet."""
        return [r[0] for r in self._query_all("lapsed_claims", {"now": now, "limit": limit})]

    def count_stalled(self, now: int) -> int:
        """How many live claims are recorded stalled (and made no progress since)."""
        return _int(self._query_one("count_stalled", {"now": now}))

    def transfers(self, item_id: str) -> list[Transfer]:
        return [rows.transfer_from(r) for r in self._query_all("list_transfers", {"item": item_id})]

    def get_cursor(self, principal: str, name: str) -> int:
        return _int(self._query_one("get_cursor", {"principal": principal, "name": name}))

    def session_task(self, principal: str, session: str) -> str | None:
        """The task set for ``principal``'s ``session`` (:meth:`Writes.set_session_task`)."""
        row = self._query_one("get_session_task", {"principal": principal, "session": session})
        return None if row is None else str(row[0])


def prefix_end(prefix: str | None) -> str | None:
    """The smallest string above every one starting with ``prefix`` in code point order (the
    keys' order on both backends), or ``None`` when there is none to bound by."""
    if not prefix or prefix[-1] == chr(0x10FFFF):
        return None
    after = ord(prefix[-1]) + 1
    return prefix[:-1] + chr(0xE000 if 0xD800 <= after < 0xE000 else after)  # no surrogates
