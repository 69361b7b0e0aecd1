"""The SQLite file a store opened, and whether the path still names it.

A store remembers the file it opened (device and inode). If the file at the path is removed,
moved or replaced, the connections would go on with a file nobody reads: every check here then
fails with ``unable to open`` naming the problem, and a commit is refused before it is made.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from tenure.store.sqlite.files import prepare_database
from tenure.store.sqlite.locks import is_busy


def gone(why: str) -> sqlite3.OperationalError:
    """The error of a database file that cannot be used any more."""
    return sqlite3.OperationalError(f"unable to open database file: {why}")


class OpenedFile:
    """``path`` as given, ``real_path`` (SQLite's WAL is beside the file a link names) and the
    file's identity (``None`` for SQLite's in-memory database)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        on_disk = str(path) != ":memory:"
        self.real_path = self.path.resolve() if on_disk else self.path
        self.identity: tuple[int, int] | None = None  # the file opened (device, inode)
        if on_disk:
            prepare_database(self.real_path)
            info = os.stat(self.real_path)
            self.identity = (info.st_dev, info.st_ino)

    def check(self) -> None:
        """``unable to open`` if the file at the path is not the one opened (removed, moved,
        replaced) or cannot be looked at."""
        if self.identity is None:
            return
        try:
            info = os.stat(self.real_path)
        except OSError as exc:
            raise gone(f"{self.real_path}: {exc.strerror}") from None
        if (info.st_dev, info.st_ino) != self.identity:
            raise gone(f"{self.real_path} was replaced since it was opened (restart the server)")

    def probe(self) -> None:
        """Check that the file is still the one opened and can be read; raises
        :class:`sqlite3.OperationalError` naming the problem if not."""
        self.check()
        if self.identity is None:
            return
        try:
            uri = f"{self.real_path.as_uri()}?mode=ro"  # (as_uri: a path of any characters)
            probe = sqlite3.connect(uri, uri=True, timeout=1)
            try:
                probe.execute("PRAGMA schema_version").fetchone()
            finally:
                probe.close()
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                return  # another writer: the file is there
            raise gone(f"{self.real_path}: {exc}") from None
