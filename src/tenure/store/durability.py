"""What happens when a commit cannot be made durable: in a server, the process exits.

A failed ``fdatasync`` (or a commit that failed with an I/O error) leaves the database in a
state nobody can vouch for: the commit is already visible to readers, and a later sync that
succeeds may acknowledge commits that sit behind pages the kernel dropped. Answering an error
and going on is not safe, so ``tenure serve`` (:func:`exit_on_failure`) stops at once: it logs
one line, acknowledges nothing more and exits with :data:`EXIT_CODE`, for its supervisor
(systemd, the orchestrator) to restart it, which recovers the database from what is on disk.
Elsewhere (a library user, a CLI command) the failure is raised to the caller, who learns that
its write may not be durable.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys

log = logging.getLogger("tenure.store")
EXIT_CODE = 70  # the failure of the machine's storage: not a clean stop
_exit = False


def exit_on_failure(enabled: bool = True) -> None:
    """From now on a failed sync or an I/O error at commit ends the process (a server)."""
    global _exit
    _exit = enabled


def lost(what: str, error: BaseException | str) -> None:
    """``what`` failed with ``error`` and the commits it covers may not be durable: in a server,
    log it and exit now (this does not return); else return (the caller raises)."""
    if not _exit:
        return
    log.critical(
        "durability lost: %s failed (%s); stopping without acknowledging anything more "
        "(exit %d): restart the server to recover the database from what is on disk",
        what,
        error,
        EXIT_CODE,
    )
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(EXIT_CODE)


def is_io_error(exc: BaseException) -> bool:
    """A SQLite error of the storage itself (``SQLITE_IOERR``, any of its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF == sqlite3.SQLITE_IOERR
    )
