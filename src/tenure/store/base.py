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
from dataclasses import dataclass
from typing import Any, Protocol

from tenure.core.items import Item, ItemCursor, ItemSummary, Transfer
from tenure.core.models import (
    Event,
    EventDraft,
    EventQuery,
    EventTally,
    FencedValue,
    FencedWrite,
    KeyRecord,
    Principal,
)
from tenure.core.token_floor import TokenFloor

#: the reason recorded when a dispatched agent's tokens end with its claim
ENDED = "its claim ended"


@dataclass(frozen=True)
class Credential:
    """An unrevoked token as the store has it: whose it is, its id, and when it expires
    (``None``: never). Expired or not is the caller's to decide, with its clock."""

    principal: Principal
    token_id: str
    expires_at: int | None

    def expired(self, now: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True)
class TokenInfo:
    """A token of a principal as listed: its id and times (ms), never its secret or hash."""

    token_id: str
    created_at: int
    expires_at: int | None
    revoked_at: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "token_id": self.token_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True)
class Removal:
    """What removing a principal did: ``removed``, with the ids of the tokens it revoked; or
    not, because of the live leases it holds (``leases``, keys) and the open items assigned to
    it (``items``, ids) or the principals it dispatched (``children``: their rights follow
    its name, so a principal added later under that name would inherit them; each list cut at
    10)."""

    removed: bool
    revoked: tuple[str, ...] = ()
    leases: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    children: tuple[str, ...] = ()


class KeyTx(Protocol):
    """One open transaction on one key."""

    now: int
    record: KeyRecord | None

    def register(self) -> FencedValue | None: ...

    def token_floor(self) -> int:
        """Every token granted from now on is larger than this (0: no floor)."""
        ...

    def find_op(self, token: int, op_id: str) -> FencedWrite | None:
        """The write ``op_id`` named under ``token`` of this key, if any."""
        ...

    def save(self, record: KeyRecord) -> None: ...

    def save_register(self, write: FencedWrite, op_id: str | None) -> None: ...

    def append(self, events: Sequence[EventDraft]) -> None: ...

    # items (the key is ``items/<id>``) ----------------------------------------------------
    def item(self, item_id: str) -> Item | None: ...

    def save_item(self, item: Item) -> None: ...

    def add_item(self, item: Item) -> bool:
        """Create ``item`` in this transaction; ``False`` (nothing done) if its id is taken."""
        ...

    def add_transfers(self, transfers: Sequence[Transfer]) -> None: ...

    def find_item_op(self, item_id: str, op_id: str) -> Any: ...

    def save_item_op(self, item_id: str, op_id: str, result: Any) -> None: ...

    def add_principal(
        self,
        principal: Principal,
        token_hash: str,
        token_id: str,
        dispatched_for: str | None = None,
        expires_at: int | None = None,
    ) -> None:
        """Create a principal in this transaction (dispatch claims for it atomically);
        ``dispatched_for``: the item it was dispatched for (its tokens end with that claim);
        ``expires_at``: when its token expires (``None``: never)."""
        ...


class Store(Protocol):
    """What the service needs from a database. Instants come from :meth:`now_ms`."""

    url: str

    def key_tx(self, key: str, *, create: bool = False) -> AbstractContextManager[KeyTx]:
        """Lock ``key`` and open a transaction; ``create`` makes its row if missing."""
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

    def renew_all_json(self, holder: str, session: str | None) -> tuple[int, bytes, int]:
        """:meth:`renew_all` of every live lease of ``holder``, with the reply written by the
        database: ``(the instant, the renewed leases as JSON, their number)``. The JSON (UTF-8)
        is what ``Lease.to_dict()`` gives for each renewed lease (``state`` live), by key,
        separated by commas: the inside of the array (``b"[" + it + b"]"``), so that the reply
        around it takes one copy of the text (22 MB for 100,000 leases), not two more."""
        ...

    def get(self, key: str) -> KeyRecord | None: ...

    def live(
        self,
        now: int,
        prefix: str | None = None,
        holder: str | None = None,
        task: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[KeyRecord]:
        """Live leases by key; ``after``: only keys sorting after it (a page cursor)."""
        ...

    def read_register(self, key: str) -> FencedValue | None: ...

    def events(self, query: EventQuery) -> list[Event]: ...

    def reap(self, limit: int) -> list[Event]:
        """Record ``expired`` for up to ``limit`` lapsed, unrecorded leases; exactly once."""
        ...

    def next_deadline(self) -> int | None:
        """The earliest deadline of a lease whose end is not yet recorded."""
        ...

    def add_principal(
        self,
        principal: Principal,
        token_hash: str | None = None,
        token_id: str | None = None,
        actor: str | None = None,
        expires_at: int | None = None,
    ) -> None:
        """Create ``principal`` (and, given ``token_hash``, its first token, which expires at
        ``expires_at`` unless ``None``) in one transaction, with its events
        (``principal_created``, ``token_issued``; ``actor`` made it)."""
        ...

    def add_token(
        self,
        name: str,
        token_id: str,
        token_hash: str,
        actor: str | None = None,
        expires_at: int | None = None,
    ) -> None: ...

    def revoke_token(
        self, name: str, token_id: str, actor: str | None = None, reason: str | None = None
    ) -> bool:
        """Revoke a token of ``name`` (and record ``token_revoked``); ``False`` if it has no
        such unrevoked token."""
        ...

    def revoke_ended_agents(self, limit: int) -> list[Event]:
        """Revoke the tokens of dispatched agents whose claim on their item ended (released,
        completed, expired, force-released, taken over: whatever way, ``kill -9`` of their
        supervisor included); the ``token_revoked`` events."""
        ...

    def list_principals(self) -> list[Principal]: ...

    def list_tokens(self, name: str) -> list[TokenInfo]:
        """Every token of ``name``, revoked ones included, oldest first."""
        ...

    def token_floor(self) -> TokenFloor:
        """The token floor and the largest token ever granted in this database."""
        ...

    def set_token_floor(self, floor: int, actor: str | None) -> TokenFloor:
        """Raise the token floor to ``floor`` (refused if lower: floors only grow), recorded as
        ``token_floor_set``; in one transaction."""
        ...

    def set_roles(self, name: str, roles: tuple[str, ...], actor: str | None) -> Principal | None:
        """Replace the roles of ``name`` and record ``principal_roles_set`` (from, to; ``actor``
        did it); ``None`` if there is no such principal."""
        ...

    def remove_principal(self, name: str, actor: str | None) -> Removal | None:
        """In one transaction: unless ``name`` holds a live lease or is assigned an open item,
        revoke its live tokens (``token_revoked``), delete it, its tokens and its event cursors,
        and record ``principal_removed``. ``None`` if there is no such principal."""
        ...

    def get_principal(self, name: str) -> Principal | None: ...

    def auth_version(self) -> int:
        """A counter that moves whenever a principal or a token changes, whoever changes it."""
        ...

    def principal_by_token(self, token_hash: str) -> Principal | None:
        """The principal of an unrevoked, unexpired token (at :meth:`now_ms`)."""
        ...

    def token_by_hash(self, token_hash: str) -> Credential | None:
        """The unrevoked token of ``token_hash``, expired or not."""
        ...

    def create_item(self, item: Item) -> bool:
        """Insert ``item``; ``False`` if its id is taken."""
        ...

    def get_item(self, item_id: str) -> Item | None: ...

    def list_items(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
        after: ItemCursor | None = None,
    ) -> list[Item]:
        """Items by priority, then age, then id; ``after``: only those sorting after it."""
        ...

    def ready_items(self, now: int, limit: int) -> list[Item]: ...

    def list_item_summaries(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
        after: ItemCursor | None = None,
    ) -> list[ItemSummary]:
        """:meth:`list_items` as summaries: bodies, results and progress data stay in the
        database."""
        ...

    def ready_item_summaries(self, now: int, limit: int) -> list[ItemSummary]: ...

    def stalled_claims(self, now: int, before: int, limit: int) -> list[str]:
        """The items of live claims idle (no acquisition, no progress) since ``before`` whose
        stall is not recorded yet."""
        ...

    def count_stalled(self, now: int) -> int:
        """How many live claims are recorded stalled (and made no progress since)."""
        ...

    def transfers(self, item_id: str) -> list[Transfer]: ...

    def get_cursor(self, principal: str, name: str) -> int: ...

    def set_cursor(self, principal: str, name: str, event_id: int) -> None: ...

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

    def prune_events(self, max_count: int, before: int, batch: int) -> int:
        """Fold into the totals the oldest batch of up to ``batch`` events that are beyond
        the newest ``max_count`` or older than ``before``, and delete them, except the endings
        (:data:`tenure.store.retention.ENDINGS`) not older than ``before``: retention by count
        keeps those. Also delete up to ``batch`` of the endings kept so, once older than
        ``before``. The number deleted."""
        ...

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """Hear other servers' commits: ``on_events()`` when events were appended,
        ``on_free(key)`` when a key was freed. Returns a function that stops listening, or
        ``None`` when the backend has no such notifications."""
        ...

    def schema_version(self) -> int: ...

    def close(self) -> None: ...
