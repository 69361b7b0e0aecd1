"""One key's write transaction, as the service sees it (:meth:`tenure.store.base.Store.key_tx`).

A write goes through a short transaction that holds the key's row lock (``SELECT … FOR UPDATE``
on PostgreSQL, the write lock of ``BEGIN IMMEDIATE`` on SQLite), reads the instant on the
store's clock *after* the lock is held, and commits the record and its events together.
Decisions are made by the pure functions in :mod:`tenure.core.decide` in between, so no Python
read-then-write can race: the database serialises writers on the key. Each backend implements
this protocol (:mod:`tenure.store.sqlite.tx`, :mod:`tenure.store.postgres.tx`); the methods
with a body here are written once for both, over :meth:`KeyTx.read` and :meth:`KeyTx.write`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tenure.core.items import Item, Transfer
from tenure.core.models import EventDraft, FencedValue, FencedWrite, KeyRecord, Principal
from tenure.core.subtree import upper_bound
from tenure.core.subtree_tokens import GrantAbove
from tenure.store import rows
from tenure.store.values import NewToken


class KeyTx(Protocol):
    """One open transaction on one key."""

    key: str
    now: int
    record: KeyRecord | None

    def write(self, name: str, params: dict[str, Any]) -> None:
        """Run the backend's write statement ``name`` in this transaction (PostgreSQL: sent
        with the transaction's next round trip)."""
        ...

    def register(self) -> FencedValue | None: ...

    def nearby(self) -> Sequence[KeyRecord]:
        """For the acquisition the transaction was opened for (its :class:`Reach`; none: an
        empty list): the leases on other keys that may conflict with it through a subtree, a
        superset the core sifts (:func:`tenure.core.subtree.blocking`): the unended subtree
        leases on the prefixes above the key and, for a subtree, the unended lease under it
        with the latest deadline among those not the acquirer's. None of them can change
        before this transaction ends (SQLite: the write lock; PostgreSQL: the prefix locks)."""
        ...

    def token_floor(self) -> int:
        """Every token granted from now on on this key is larger than this (0: no floor): the
        token floor, and for a key without a row also the largest token of the rows compaction
        deleted."""
        ...

    def find_op(self, token: int, op_id: str) -> FencedWrite | None:
        """The write ``op_id`` named under ``token`` of this key, if any."""
        ...

    def save(self, record: KeyRecord) -> None: ...

    # per-principal bounds (tenure.core.quotas) ---------------------------------------------
    def live_leases(self, holder: str, cap: int) -> int:
        """How many live leases ``holder`` has (item claims included; the count stops at
        ``cap``), this transaction's own saves included. No other transaction adds one to
        ``holder``'s before this one ends (SQLite: the write lock; PostgreSQL: a lock on the
        principal, held to the end of the transaction). In a PostgreSQL group: 0, and the
        group's commit checks that ``holder`` has no more than ``cap`` then, or fails whole
        with :class:`tenure.errors.QuotaExceeded` (its calls may then run again, each alone)."""
        ...

    def live_agents(self, parent: str, cap: int) -> int:
        """How many agents ``parent`` dispatched have a live claim (the count stops at
        ``cap``); ordered with other transactions as :meth:`live_leases`."""
        ...

    def count_items(self, principal: str, minute: int, n: int, limit: int) -> tuple[bool, int]:
        """Add ``n`` to the items ``principal`` created in ``minute`` unless that passes
        ``limit``: ``(added, the count)`` (not added: the count as it stays)."""
        name = f"quota:items:{minute:012d}"
        params = {"principal": principal, "name": name, "n": n, "limit": limit}
        got = self.read("count_items", params) if n <= limit else None
        if got is None:
            current = self.read("get_cursor", {"principal": principal, "name": name})
            return False, 0 if current is None else int(current[0])
        if int(got[0]) == n:  # the minute's first count: forget the minutes before it
            self.write("forget_item_counts", {"principal": principal, "name": name})
        return True, int(got[0])

    def read(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """Run the backend's statement ``name`` in this transaction: its first row."""
        ...

    # subtree tokens (tenure.core.subtree_tokens) ----------------------------------------------
    def grant_above(self, prefixes: Sequence[str]) -> GrantAbove | None:
        """The latest token granted to a subtree lease on one of ``prefixes``, with that
        prefix's lease as it is now; ``None`` if there was none."""
        row = self.read("subtree_grant_above", {"prefixes": rows.dumps(list(prefixes))})
        if row is None:
            return None
        lease = rows.record_from(row[1:]) if row[1] is not None and row[2] else None
        return GrantAbove(int(row[0]), lease)

    def max_token_under(self, prefix: str) -> int:
        """The largest token ever granted on a key under ``prefix`` (or a deleted row's)."""
        row = self.read("max_token_under", {"prefix": prefix, "upper": upper_bound(prefix)})
        return int(row[0]) if row and row[0] is not None else 0

    def save_subtree_token(self, prefix: str, token: int) -> None:
        self.write("save_subtree_token", {"prefix": prefix, "token": token})

    def save_register(self, write: FencedWrite, op_id: str | None) -> None:
        params = rows.register_params(write, self.now)
        self.write("save_register", params)
        if op_id is not None:  # the write is remembered by its op_id (a retry finds it)
            self.write("save_op", {**params, "op_id": op_id, "writer": write.writer})

    def append(self, events: Sequence[EventDraft]) -> None: ...

    # items (the key is ``items/<id>``) ----------------------------------------------------
    def item(self, item_id: str) -> Item | None: ...

    def save_item(self, item: Item) -> None: ...

    def add_item(self, item: Item) -> bool:
        """Create ``item`` in this transaction; ``False`` (nothing done) if its id is taken."""
        ...

    def add_transfers(self, transfers: Sequence[Transfer]) -> None:
        for t in transfers:
            self.write("insert_transfer", rows.transfer_params(t))

    def find_item_op(self, item_id: str, op_id: str) -> Any: ...

    def save_item_op(self, item_id: str, op_id: str, result: Any) -> None:
        params = {"item": item_id, "op_id": op_id, "result": rows.dumps(result), "now": self.now}
        self.write("save_item_op", params)

    def add_principal(
        self, principal: Principal, token: NewToken, dispatched_for: str | None = None
    ) -> None:
        """Create a principal and its ``token`` in this transaction (dispatch claims for it
        atomically); ``dispatched_for``: the item it was dispatched for (its tokens end with
        that claim)."""
        self.write("add_principal", rows.principal_params(principal, self.now, dispatched_for))
        self.write("add_token", token.row(principal.name, self.now))
