"""Who may read a SQLite database: tenure sets the mode only of what it creates.

A directory tenure creates for a database (and each missing directory above it) is made
``0700``; a database file it creates is made ``0600`` before SQLite opens it, and SQLite gives
the WAL and shared-memory files it creates the database file's mode (``0600`` then too).
Anything that existed before is left exactly as it was: a database file (or its ``-wal`` or
``-shm``) that the group or others may read gets a warning in the log, not a ``chmod``; the
directory it lives in is the user's business.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("tenure.store")
FILE_MODE, DIR_MODE = 0o600, 0o700
SUFFIXES = ("", "-wal", "-shm")


def prepare_database(db: Path) -> None:
    """Before SQLite opens ``db``: the directories that are missing made ``0700``, the file
    created ``0600`` if missing; files that exist with a wider mode are named in the log."""
    make_directories(db.parent)
    try:
        os.close(os.open(db, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    except FileExistsError:
        warn_if_shared(db)


def make_directories(directory: Path) -> None:
    """Create ``directory`` and each missing one above it, ``0700``; those that exist stay as
    they are."""
    missing: list[Path] = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile by another process: theirs, left as it is
            continue


def warn_if_shared(db: Path) -> None:
    """A warning for each of ``db``'s files that the group or others may read or write."""
    for suffix in SUFFIXES:
        path = Path(f"{db}{suffix}")
        try:
            have = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            continue
        if have & 0o077:
            log.warning(
                "%s is mode %04o: others than its owner may read it (tenure leaves the mode "
                "of files it did not create as it is; chmod 600 it to keep it private)",
                path,
                have,
            )
