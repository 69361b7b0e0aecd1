"""What a backend gives :class:`tenure.store.base.Store`: a narrow connector.

The store (one class, :mod:`tenure.store.base`) holds every rule both databases share: the
reads, the writes of principals, tokens, items and cursors, compaction, statistics and
retention, each a named query of the backend's ``queries.sql`` run through the connector's
primitives. A connector holds only what differs between databases: how it connects and
reads the instant, how one transaction is opened (SQLite's writer with group commit,
:mod:`tenure.store.sqlite.writer`; a pooled PostgreSQL connection), how a key is locked
(SQLite's write lock; PostgreSQL's row and prefix locks, :mod:`tenure.store.postgres.keylock`),
how events are appended (PostgreSQL also notifies other servers), durability, and the hot
paths each backend writes its own way (a key's transaction, renew-all and its JSON reply,
the reaper). Another backend (an in-memory one for fast tests, say) is a class that has these
methods and attributes; nothing above the store changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from tenure.core.models import Event, EventDraft, KeyRecord
from tenure.store.group_commit import LoopGroups, ThreadGroups
from tenure.store.health import Health
from tenure.store.keytx import KeyTx
from tenure.store.values import Reach


class Cursor(Protocol):
    """sqlite3's connection and psycopg's cursor read alike: ``execute`` returns something
    with ``fetchone``, ``fetchall``, ``rowcount`` and iteration."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


class Connector(Protocol):
    """A database as the store needs it (see the module's docstring)."""

    url: str
    #: what the last check of the database found (:mod:`tenure.store.health`)
    health: Health
    #: the backend's queries, by name (:func:`tenure.store.sqlfiles.queries`)
    Q: Mapping[str, str]
    #: what its SQL takes for "no limit" (SQLite: ``-1``; PostgreSQL: ``NULL``)
    NO_LIMIT: int | None

    # primitives the shared logic runs on ---------------------------------------------------
    def query_all(self, name: str, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        """Every row of the query ``name``, outside any write (this thread's own write, if
        it is inside one: what it wrote)."""
        ...

    def query_one(self, name: str, params: dict[str, Any]) -> Sequence[Any] | None: ...

    def reading(self) -> AbstractContextManager[Cursor]:
        """A cursor for a few reads (each its own snapshot)."""
        ...

    def snapshot(self) -> AbstractContextManager[Cursor]:
        """A cursor whose reads all see one snapshot of the database."""
        ...

    def writing(self) -> AbstractContextManager[Cursor]:
        """One write transaction, committed durably when the block ends: its cursor."""
        ...

    def now_in(self, cur: Cursor) -> int:
        """The instant, read in the transaction of ``cur`` (once its locks are held)."""
        ...

    def append(self, cur: Cursor, events: Sequence[EventDraft], now: int) -> list[Event]:
        """Append ``events`` at ``now`` in the transaction of ``cur``, with their ids."""
        ...

    def texts(self, values: Sequence[str]) -> Any:
        """``values`` as one query parameter: a JSON array on SQLite, an array on PostgreSQL."""
        ...

    def stats_rows(self, name: str, params: dict[str, Any]) -> Iterator[Any]:
        """The rows of the statistics query ``name`` (``since``/``start``: a time window)."""
        ...

    # what each backend does its own way ----------------------------------------------------
    def now_ms(self) -> int: ...

    def key_tx(
        self, key: str, *, create: bool, reach: Reach | None, extends: bool
    ) -> AbstractContextManager[KeyTx]:
        """As :meth:`tenure.store.base.Store.key_tx`."""
        ...

    def group(self, keys: Sequence[str] = ()) -> AbstractContextManager[None]:
        """As :meth:`tenure.store.base.Store.group` (``keys``: PostgreSQL locks them ahead)."""
        ...

    def group_commit(self) -> LoopGroups | ThreadGroups: ...

    def renew_all(
        self, holder: str, session: str | None, keys: Sequence[str] | None
    ) -> tuple[int, list[KeyRecord]]: ...

    def renew_all_json(self, holder: str, session: str | None) -> tuple[int, list[bytes], int]: ...

    def reap(self, limit: int) -> list[Event]: ...

    def auth_version(self) -> int: ...

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None] | None: ...

    def probe(self) -> None: ...

    def recovered(self) -> None: ...

    def close(self) -> None: ...
