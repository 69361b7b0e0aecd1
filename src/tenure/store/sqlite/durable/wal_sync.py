"""Making a server's commits durable after ``COMMIT`` instead of inside it.

With ``synchronous=FULL`` SQLite syncs the WAL inside every ``COMMIT``, holding the write lock
while the disk works: the server's next group of calls cannot start until the previous group is
on disk, so the event loop alternates between running a group and waiting for its sync. In
*deferred* mode (:meth:`tenure.store.sqlite.writer.Writer.defer_sync`, used by the server) the
writer connection commits with ``synchronous=NORMAL``: ``COMMIT`` only writes the WAL frames
(tens of microseconds) and releases the lock, and whoever commits then calls :meth:`WalSync.sync`
(``fdatasync`` of the WAL file) before anyone is told of the commit. One sync covers every commit
written before it began, so while it runs the next group already executes and commits, and the
sync after it covers that group too.

What is acknowledged is on disk exactly as with ``FULL``: no reply and no listener hears of a
commit before a sync that began after it returned. What differs is only what *readers* may see:
another connection can read a commit up to one sync (a fraction of a millisecond) before it is on
disk. A ``kill -9`` of the process loses nothing of it (the frames are in the kernel's cache);
an operating-system crash or power cut in that window could lose a commit that was read but never
acknowledged to its writer. Checkpoints sync the WAL before copying it (SQLite does that in
``NORMAL`` mode), so the database file never holds what the WAL did not.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tenure.store import durability


class WalSync:
    """``fdatasync`` of one database's WAL file, reopened if the file was replaced."""

    def __init__(self, db: Path, *, needed: bool = True) -> None:
        """``needed``: ``False`` when the store was opened with ``synchronous=NORMAL`` (the
        user chose commits that are not synced): :meth:`sync` then does nothing."""
        self.path = Path(f"{db}-wal")
        self.needed = needed
        self.syncs = 0
        self._fd: int | None = None
        self._lock = threading.Lock()

    def sync(self) -> None:
        """Every commit written to the WAL before this call is on disk when it returns."""
        if not self.needed:
            return
        with self._lock:  # syncs take turns; each covers what was written before it began
            try:
                os.fdatasync(self._wal_fd())
            except OSError as exc:
                durability.lost(f"the sync of {self.path}", exc)  # a server exits here
                raise
            self.syncs += 1

    def _wal_fd(self) -> int:
        inode = os.stat(self.path).st_ino  # the WAL exists: a commit was just written to it
        if self._fd is not None and os.fstat(self._fd).st_ino != inode:
            os.close(self._fd)  # deleted and created again (every connection had closed)
            self._fd = None
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
