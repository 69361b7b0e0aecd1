"""A server's group commits on SQLite (:class:`tenure.store.base.LoopGroups`).

The server's event loop opens a group when no other writer holds the lock
(:meth:`Writer.try_group`), runs its calls in it and commits it, which in deferred mode
only writes the WAL (:mod:`tenure.store.sqlite.durable.wal_sync`); the WAL is then synced by
a helper process (:mod:`tenure.store.sqlite.durable.sync_helper`, asked by
:class:`~tenure.store.sqlite.durable.sync_process.SyncProcess`) or, without one, by
:meth:`SqliteGroups.sync` in the server's committer thread. WAL checkpoints run in a background
thread (:mod:`tenure.store.sqlite.durable.checkpoints`), not inside a commit that others wait
for.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager

from tenure.store import durability
from tenure.store.errors import sync_failed
from tenure.store.sqlite.durable.sync_process import SyncProcess
from tenure.store.sqlite.writer import Batch, Writer

log = logging.getLogger("tenure.server")


class SqliteGroups:
    """The group commits of one store's :class:`Writer` (made by its ``group_commit``)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        writer.checkpoint_in_background()
        self._wal = writer.defer_sync()  # COMMIT writes, sync makes durable

    def try_begin(self) -> Batch | None:
        return self._writer.try_group()

    def joined(self, group: Batch) -> AbstractContextManager[None]:
        return self._writer.joined(group)

    def end(self, group: Batch, *, commit: bool) -> None:
        self._writer.end_group(group, commit=commit, sync=False)

    def sync(self) -> None:
        try:
            self._wal.sync()
        except OSError as exc:
            raise sync_failed(exc) from exc

    def syncer(self) -> SyncProcess | None:
        if not self._wal.needed:
            return None
        try:
            return SyncProcess(self._wal.path)
        except OSError as exc:
            log.warning("the WAL syncer did not start (%s): syncing in a thread", exc)
            return None

    def failed(self, by: str) -> Exception:
        durability.lost(f"the sync of {self._wal.path} ({by})", "failed")
        return sync_failed()
