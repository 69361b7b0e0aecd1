"""Group commit, as a server's executor sees it (:mod:`tenure.server.runtime.executor`): a
store's ``group_commit()`` gives one of these, by backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

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
    :meth:`tenure.store.base.Store.group`, which commits durably."""

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
