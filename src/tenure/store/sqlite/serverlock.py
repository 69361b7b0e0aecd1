"""One server per SQLite file: ``tenure serve`` holds an exclusive ``flock`` on a lock file
beside the database (``tenure.db.lock``) for as long as it runs.

The lock file says who holds it (pid, the address it listens on, when it started), so a second
server on the same file refuses to start naming the first. The kernel releases a ``flock`` when
its holder's process ends, however it ends (``kill -9`` included): a stale lock file is never in
the way. Only servers take it: the library, direct mode and the CLI's commands on the database
(``tenure principal add --db``) keep working beside a running server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tenure.store.sqlite.files import FILE_MODE, make_directories

log = logging.getLogger("tenure.store")


class NoLock(RuntimeError):
    """The server lock cannot be made where the database is: the server does not start."""


class ServerRunning(RuntimeError):
    """Another server already serves this SQLite file (the message names it)."""


@dataclass
class ServerLock:
    """The lock of the server that serves ``db``; :meth:`release` it when the server stops."""

    path: Path
    fd: int | None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = None


def lock_path(db: Path) -> Path:
    """The lock file of the database ``db`` (beside the real file a link names)."""
    real = db.resolve()
    return real.with_name(f"{real.name}.lock")


def hold(db: Path, address: str) -> ServerLock:
    """Take the server lock of ``db`` for this process, listening on ``address``; or
    :class:`ServerRunning` naming the server that holds it. A lock file that cannot be made in a
    directory that exists is :class:`NoLock` (the server does not start unguarded); with no
    directory at all it is skipped, and opening the database says what is wrong."""
    path = lock_path(db)
    try:
        make_directories(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        if path.parent.is_dir():  # the database may open, but nothing would stop a second server
            raise NoLock(
                f"cannot make the server lock {path} ({exc.strerror}): a second server on "
                f"{db} could not be stopped. Let tenure write in {path.parent}."
            ) from None
        return ServerLock(path, None)  # no directory: opening the database says what is wrong
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read(fd)
        os.close(fd)
        raise ServerRunning(_refusal(db, path, holder)) from None
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    doc = {"pid": os.getpid(), "address": address, "started": started, "db": str(db)}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(doc).encode() + b"\n", 0)
    return ServerLock(path, fd)


def _read(fd: int) -> dict[str, object]:
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(os.pread(fd, 4096, 0) or b"{}")
        if isinstance(doc, dict):
            return doc
    return {}


def _refusal(db: Path, path: Path, holder: dict[str, object]) -> str:
    if holder.get("pid"):
        who = (
            f"pid {holder.get('pid')}, listening on {holder.get('address', '?')}, "
            f"started {holder.get('started', '?')}"
        )
    else:
        who = "a server that is starting"
    return (
        f"another tenure server already serves {db} ({who}; lock {path}). "
        "Stop it, or pass another --db: one server per SQLite file (several servers "
        "share a PostgreSQL database)."
    )
