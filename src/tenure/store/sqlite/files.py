"""Who may read a SQLite database: its files are the owner's alone (``0600``), and so is the
directory tenure makes for them (``0700``).

A new database file is created ``0600`` before SQLite opens it; SQLite gives its WAL and
shared-memory files the database file's permissions. Files (and a directory) that already
exist with more permissions are tightened, with a log line saying so. A directory that is not
the user's own to close (not theirs, shared with the sticky bit like ``/tmp``, their home or the
working directory) is left as it is: the files in it are still ``0600``.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("tenure.store")
FILE_MODE, DIR_MODE = 0o600, 0o700
SUFFIXES = ("", "-wal", "-shm", "-journal")


def prepare_database(db: Path) -> None:
    """Before SQLite opens ``db``: its directory made (``0700``) or tightened, the file
    created ``0600`` if missing, its files tightened if they exist."""
    directory = db.parent
    if not directory.exists():
        directory.mkdir(parents=True, mode=DIR_MODE)
    elif _ours_to_close(directory):
        tighten(directory, DIR_MODE)
    if not db.exists():
        os.close(os.open(db, os.O_CREAT | os.O_WRONLY, FILE_MODE))
    tighten_database(db)


def tighten_database(db: Path) -> None:
    """The database file and its WAL, shared-memory and journal files, ``0600`` if they exist."""
    for suffix in SUFFIXES:
        tighten(Path(f"{db}{suffix}"), FILE_MODE)


def tighten(path: Path, mode: int) -> None:
    """Remove from ``path``'s permissions what ``mode`` does not allow (and say so)."""
    try:
        have = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    if have & ~mode:
        os.chmod(path, have & mode)
        log.warning("tightened %s from %04o to %04o", path, have, have & mode)


def _ours_to_close(directory: Path) -> bool:
    info = directory.stat()
    if info.st_uid != os.getuid() or info.st_mode & stat.S_ISVTX:
        return False
    shared = {Path.home().resolve(), Path.cwd().resolve()}
    return directory.resolve() not in shared
