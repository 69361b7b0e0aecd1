"""The store protocol: the only seam between the service and a database.

A write goes through :meth:`Store.key_tx`: a short transaction that holds the key's row lock
(``SELECT … FOR UPDATE`` on PostgreSQL, the write lock of ``BEGIN IMMEDIATE`` on SQLite), reads
the instant on the store's clock *after* the lock is held, and commits the record and its events
together. Decisions are made by the pure functions in :mod:`tenure.core.decide` in between, so no
Python read-then-write can race: the database serialises writers on the key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from tenure.core.items import Item, Transfer
from tenure.core.models import (
    Event,
    EventDraft,
    EventTally,
    FencedValue,
    FencedWrite,
    KeyRecord,
    LostLease,
    Principal,
)
from tenure.core.retention import Pruned
from tenure.core.subtree import upper_bound
from tenure.core.subtree_tokens import GrantAbove
from tenure.core.token_floor import TokenFloor
from tenure.store import rows
from tenure.store.compaction import Compaction
from tenure.store.health import Health
from tenure.store.reads import Reads
from tenure.store.values import ENDED, Credential, NewToken, Reach, Removal, TokenInfo
from tenure.store.writes import Writes

__all__ = ["ENDED", "Credential", "KeyTx", "Reach", "Removal", "Store", "TokenInfo"]


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


class Store(Reads, Writes, Compaction, Protocol):
    """What the service needs from a database. Instants come from :meth:`now_ms`. The reads
    and writes both backends make alike are written once, in :class:`tenure.store.reads.Reads`
    and :class:`tenure.store.writes.Writes` (each backend gives them its queries and its
    transaction); the rest is each backend's own."""

    url: str
    #: what the last check of the database found (:mod:`tenure.store.health`)
    health: Health

    def probe(self) -> None:
        """Check that the database can be reached and read now; the driver's error if not."""
        ...

    def recovered(self) -> None:
        """The database answers again after an outage the server's watch saw: make sure that
        no token it grants from now on goes back (PostgreSQL: the floor is raised from the
        clock, :mod:`tenure.store.postgres.continuity`); raises if it cannot."""
        ...

    def key_tx(
        self,
        key: str,
        *,
        create: bool = False,
        reach: Reach | None = None,
        extends: bool = False,
    ) -> AbstractContextManager[KeyTx]:
        """Lock ``key`` and open a transaction; ``create`` makes its row if missing; ``reach``:
        the acquisition it is for, whose nearby leases :meth:`KeyTx.nearby` gives; ``extends``:
        it may push a live lease's deadline (a renewal, an extend). An acquisition or such a
        transaction excludes subtree acquisitions that would read its key (PostgreSQL: the
        prefix locks of :mod:`tenure.store.postgres.tree`)."""
        ...

    def now_ms(self) -> int: ...

    def group(self) -> AbstractContextManager[None]:
        """The writes of this thread inside share one transaction, durable when the block ends
        (a write that fails rolls back alone; a failed commit fails them all): one group commit
        for many calls. (On PostgreSQL an error of the database loses the whole group.)"""
        ...

    def renew_all(
        self, holder: str, session: str | None, keys: Sequence[str] | None
    ) -> tuple[int, list[KeyRecord]]:
        """Renew, in one transaction, every live lease of ``holder`` (only its ``session``'s
        unless ``None``; or those among ``keys``), each with its own ttl; ``(the instant, the
        renewed records)``."""
        ...

    def renew_all_json(self, holder: str, session: str | None) -> tuple[int, list[bytes], int]:
        """:meth:`renew_all` of every live lease of ``holder``, with the reply written by the
        database: ``(the instant, the renewed leases as JSON in parts, their number)``. The JSON
        (UTF-8) is what ``Lease.to_dict()`` gives for each renewed lease (``state`` live), by
        key, separated by commas; the parts, put end to end, are the inside of the array
        (``b"[" + b"".join(them) + b"]"``), so that the reply around them takes one copy of the
        text (22 MB for 100,000 leases), not two more (PostgreSQL sends it in several)."""
        ...

    def lapsed(self, holder: str, session: str, window_ms: int) -> tuple[int, list[LostLease]]:
        """The leases of ``holder``'s ``session`` that expired (recorded or not yet) or were
        force-released, whose deadline is less than ``window_ms`` before the instant (or after
        it): ``(the instant, each one's key, reason and token)``, by key. Read along an index of
        the lapsed leases by holder, session and deadline and one of the unended leases by
        deadline: its cost grows neither with the session's live leases nor with others'."""
        ...

    def reap(self, limit: int) -> list[Event]:
        """Record ``expired`` for up to ``limit`` lapsed, unrecorded leases; exactly once."""
        ...

    def token_floor(self) -> TokenFloor:
        """The token floor and the largest token ever granted in this database."""
        ...

    def auth_version(self) -> int:
        """A counter that moves whenever a principal or a token changes, whoever changes it."""
        ...

    # statistics and retention (see tenure.store.sqlite.stats) ------------------------------
    def tally_events(self, after: int) -> EventTally:
        """Counts by kind of the events after id ``after``, in one snapshot; when ``after`` is
        older than what retention folded away, the folded totals are included (``base``)."""
        ...

    def count_events_since(self, since: int) -> dict[str, int]: ...

    def live_counts(self, now: int) -> tuple[int, int]:
        """``(live leases, live item claims)``."""
        ...

    def hot_keys(self, since: int, limit: int) -> list[tuple[str, int]]: ...

    def expiring_holders(self, since: int, limit: int) -> list[tuple[str, int, int]]:
        """``(holder, expired, ended)`` of the holders with expiries since ``since``."""
        ...

    def hold_times(self, since: int, limit: int) -> list[int]: ...

    def timeline(self, start: int, bucket_ms: int) -> list[tuple[int, str, int]]:
        """``(slot, ending, count)``: endings since ``start`` by slot of ``bucket_ms``."""
        ...

    def last_event_id(self) -> int:
        """The newest event's id (0 for none): every event up to it is committed."""
        ...

    def conflict_total(self) -> int:
        """Every refusal ever counted (the keys' own counters: the log coalesces refusals
        and retention drops events)."""
        ...

    def prune_events(self, max_count: int, before: int, audit_before: int, batch: int) -> Pruned:
        """Fold into the totals the oldest batch of up to ``batch`` events that are beyond
        the newest ``max_count`` or older than ``before``, and delete them, except the kinds
        kept by age (:data:`tenure.core.retention.KEPT_BY_AGE`) not older than
        ``audit_before``: retention by count keeps those. Also delete up to ``batch`` of the
        events kept so, once older than ``audit_before``. What it deleted and folded."""
        ...

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """Hear other servers' commits: ``on_events()`` when events were appended,
        ``on_free(key)`` when a key was freed. Returns a function that stops listening, or
        ``None`` when the backend has no such notifications."""
        ...

    def schema_version(self) -> int: ...

    def group_commit(self) -> LoopGroups | ThreadGroups:
        """For a server: how its executor groups the writes of many calls into one commit
        (:mod:`tenure.server.runtime.executor`). Once per store; a SQLite store also starts
        checkpointing in the background and commits with a deferred sync from then on."""
        ...

    def close(self) -> None: ...


#: what a syncer's answer is handed to: the last group number a sync covered, and whether it did
Synced = Callable[[int, bool], None]


class Syncer(Protocol):
    """A helper that makes committed groups durable while the event loop goes on: asked with a
    group number, it answers with the last number one sync covered
    (:class:`tenure.store.sqlite.durable.sync_process.SyncProcess`)."""

    @property
    def attached(self) -> bool: ...

    def attach(self, loop: Any, synced: Synced, lost: Callable[[], None]) -> None:
        """On the event ``loop``: answers go to ``synced``; ``lost()`` once if it goes away."""
        ...

    def request(self, number: int) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class LoopGroups(Protocol):
    """Group commit on the server's event loop (SQLite): a group begins only if it need not wait
    (:meth:`try_begin`), its calls run on the loop (:meth:`joined`), its commit only writes
    (:meth:`end`), and a sync after it (:meth:`sync`, or the :meth:`syncer`) makes every group
    committed before it durable. A group that cannot begin at once runs in a thread, in
    :meth:`Store.group`, which commits durably."""

    def try_begin(self) -> Any:
        """Open a group without waiting for any lock (``None``: another writer has it)."""
        ...

    def joined(self, group: Any) -> AbstractContextManager[None]:
        """The writes of this thread inside go into ``group``, a savepoint each."""
        ...

    def end(self, group: Any, *, commit: bool) -> None:
        """Commit (written, not yet durable) or roll back ``group``; a failed commit raises."""
        ...

    def sync(self) -> None:
        """Make every group committed before this call durable; fails with the error of every
        call it covers (and ends a server: :mod:`tenure.store.durability`)."""
        ...

    def syncer(self) -> Syncer | None:
        """A helper to sync instead (``None``: none is needed, or it did not start: sync in a
        thread); the caller closes it."""
        ...

    def failed(self, by: str) -> Exception:
        """A sync by ``by`` failed: the error of every call it covered (a server exits here)."""
        ...


@runtime_checkable
class ThreadGroups(Protocol):
    """Group commit in one thread (PostgreSQL): :meth:`group` runs many calls in one
    transaction on one connection, their ``keys`` locked ahead; if it fails, nothing of it
    happened (:func:`tenure.store.errors.unreachable` tells a lost database from a call's
    doing)."""

    def group(self, keys: Sequence[str] = ()) -> AbstractContextManager[None]: ...
