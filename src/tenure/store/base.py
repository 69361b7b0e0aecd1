"""The store: the only seam between the service and a database.

:class:`Store` is one concrete class. What both databases do alike is written here (and in its
parts: :mod:`tenure.store.reads`, :mod:`tenure.store.writes`, :mod:`tenure.store.compaction`,
:mod:`tenure.store.stats_reads`); what differs is the backend's connector
(:class:`tenure.store.connector.Connector`: :mod:`tenure.store.sqlite.connector`,
:mod:`tenure.store.postgres.connector`).

A write goes through :meth:`Store.key_tx`: a short transaction that holds the key's row lock
(``SELECT … FOR UPDATE`` on PostgreSQL, the write lock of ``BEGIN IMMEDIATE`` on SQLite), reads
the instant on the store's clock *after* the lock is held, and commits the record and its events
together. Decisions are made by the pure functions in :mod:`tenure.core.decide` in between, so no
Python read-then-write can race: the database serialises writers on the key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from tenure.core.models import Event, KeyRecord, LostLease
from tenure.core.token_floor import TokenFloor
from tenure.store import rows
from tenure.store.compaction import Compaction
from tenure.store.connector import Connector
from tenure.store.group_commit import LoopGroups, Syncer, ThreadGroups
from tenure.store.health import Health
from tenure.store.keytx import KeyTx
from tenure.store.reads import Reads
from tenure.store.stats_reads import StatsReads
from tenure.store.values import ENDED, Credential, Reach, Removal, TokenInfo
from tenure.store.writes import Writes

__all__ = [
    "ENDED",
    "Credential",
    "KeyTx",
    "LoopGroups",
    "Reach",
    "Removal",
    "Store",
    "Syncer",
    "ThreadGroups",
    "TokenInfo",
]


class Store(Reads, Writes, Compaction, StatsReads):
    """What the service needs from a database, over one backend's ``connector``. Instants come
    from :meth:`now_ms`."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector

    @property
    def url(self) -> str:
        return self.connector.url

    @property
    def health(self) -> Health:
        """What the last check of the database found (:mod:`tenure.store.health`)."""
        return self.connector.health

    def probe(self) -> None:
        """Check that the database can be reached and read now; the driver's error if not."""
        self.connector.probe()

    def recovered(self) -> None:
        """The database answers again after an outage the server's watch saw: make sure that
        no token it grants from now on goes back (PostgreSQL: the floor is raised from the
        clock, :mod:`tenure.store.postgres.continuity`); raises if it cannot."""
        self.connector.recovered()

    def key_tx(
        self, key: str, *, create: bool = False, reach: Reach | None = None, extends: bool = False
    ) -> AbstractContextManager[KeyTx]:
        """Lock ``key`` and open a transaction; ``create`` makes its row if missing; ``reach``:
        the acquisition it is for, whose nearby leases :meth:`KeyTx.nearby` gives; ``extends``:
        it may push a live lease's deadline (a renewal, an extend). An acquisition or such a
        transaction excludes subtree acquisitions that would read its key (PostgreSQL: the
        prefix locks of :mod:`tenure.store.postgres.keylock`)."""
        return self.connector.key_tx(key, create=create, reach=reach, extends=extends)

    def group(self, keys: Sequence[str] = ()) -> AbstractContextManager[None]:
        """The writes of this thread inside share one transaction, durable when the block ends
        (a write that fails rolls back alone; a failed commit fails them all): one group commit
        for many calls. (On PostgreSQL an error of the database loses the whole group; ``keys``,
        the keys the calls will write if known, are locked ahead in its first round trip.)"""
        return self.connector.group(keys)

    def group_commit(self) -> LoopGroups | ThreadGroups:
        """For a server: how its executor groups the writes of many calls into one commit
        (:mod:`tenure.server.runtime.executor`). Once per store; a SQLite store also starts
        checkpointing in the background and commits with a deferred sync from then on."""
        return self.connector.group_commit()

    def renew_all(
        self, holder: str, session: str | None, keys: Sequence[str] | None
    ) -> tuple[int, list[KeyRecord]]:
        """Renew, in one transaction, every live lease of ``holder`` (only its ``session``'s
        unless ``None``; or those among ``keys``), each with its own ttl; ``(the instant, the
        renewed records)``."""
        return self.connector.renew_all(holder, session, keys)

    def renew_all_json(self, holder: str, session: str | None) -> tuple[int, list[bytes], int]:
        """:meth:`renew_all` of every live lease of ``holder``, with the reply written by the
        database: ``(the instant, the renewed leases as JSON in parts, their number)``. The JSON
        (UTF-8) is what ``Lease.to_dict()`` gives for each renewed lease (``state`` live), by
        key, separated by commas; the parts, put end to end, are the inside of the array
        (``b"[" + b"".join(them) + b"]"``), so that the reply around them takes one copy of the
        text (22 MB for 100,000 leases), not two more (PostgreSQL sends it in several)."""
        return self.connector.renew_all_json(holder, session)

    def lapsed(self, holder: str, session: str, window_ms: int) -> tuple[int, list[LostLease]]:
        """The leases of ``holder``'s ``session`` that expired (recorded or not yet) or were
        force-released, whose deadline is less than ``window_ms`` before the instant (or after
        it): ``(the instant, each one's key, reason and token)``, by key. Read along an index of
        the lapsed leases by holder, session and deadline and one of the unended leases by
        deadline: its cost grows neither with the session's live leases nor with others'."""
        with self.connector.reading() as cur:
            now = self.connector.now_in(cur)
            params = {"holder": holder, "session": session, "now": now, "since": now - window_ms}
            found = cur.execute(self.connector.Q["lapsed_leases"], params).fetchall()
        return now, rows.lapsed_of(found)

    def reap(self, limit: int) -> list[Event]:
        """Record ``expired`` for up to ``limit`` lapsed, unrecorded leases; exactly once."""
        return self.connector.reap(limit)

    def token_floor(self) -> TokenFloor:
        """The token floor and the largest token ever granted in this database."""
        q = self.connector.Q
        with self.connector.snapshot() as cur:
            floor = cur.execute(q["token_floor"]).fetchone()
            most = cur.execute(q["max_token"]).fetchone()
        return TokenFloor(int(floor[0]) if floor else 0, int(most[0]) if most else 0)

    def auth_version(self) -> int:
        """A counter that moves whenever a principal or a token changes, whoever changes it."""
        return self.connector.auth_version()

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """Hear other servers' commits: ``on_events()`` when events were appended,
        ``on_free(key)`` when a key was freed. Returns a function that stops listening, or
        ``None`` when the backend has no such notifications."""
        return self.connector.listen(on_events, on_free)

    def schema_version(self) -> int:
        row = self.connector.query_one("schema_version", {})
        return int(row[0]) if row else 0

    def close(self) -> None:
        self.connector.close()
