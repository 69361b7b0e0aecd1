"""The WAL syncer: a helper process of ``tenure serve`` that ``fdatasync``s a SQLite WAL file.

The server's event loop commits its groups (which only writes the WAL, see
:mod:`tenure.store.sqlite.durable.wal_sync`) and asks this process to make them durable
(:class:`tenure.store.sqlite.durable.sync_process.SyncProcess`). A process of its own, not a
thread: a thread of the server needs the GIL to wake up, to return from the sync and to hand its
result back, and those hand-offs (futex wake-ups and context switches) cost the event loop more
CPU than the sync itself. A write to a pipe and a readable event are all the loop pays here.
``fdatasync`` makes the *file* durable, whichever process wrote it and whichever descriptor
syncs it.

Run as a script (``python -I sync_helper.py WAL``); it imports nothing of tenure. Requests arrive on
stdin: group numbers, 8 bytes big-endian each. For each read (every request that has arrived),
it syncs the WAL once and answers on stdout with 9 bytes: a status (0: synced, 1: the sync
failed) and the last number read. So one sync covers every request read before it began, and
requests that arrive during a sync share the next one. It exits when stdin closes: the server
stopped or was killed (nobody has to stop it); it ignores SIGINT and SIGTERM, which reach it with
the server's (the server finishes its last syncs through it, then closes the pipe).
"""

from __future__ import annotations

import os
import signal
import sys

REQUEST = 8  # bytes of a request: a group number, big-endian
SYNCED, FAILED = b"\0", b"\1"


def serve(path: str, requests: int = 0, replies: int = 1) -> None:
    """Answer the requests read from ``requests`` on ``replies`` until end of file."""
    fd: int | None = None
    pending = b""
    while True:
        data = os.read(requests, 65536)
        if not data:
            return
        pending += data
        whole = len(pending) - len(pending) % REQUEST
        if not whole:
            continue
        last, pending = pending[whole - REQUEST : whole], pending[whole:]
        try:
            fd = _opened(path, fd)
            os.fdatasync(fd)
            status = SYNCED
        except OSError:
            status = FAILED
        try:
            os.write(replies, status + last)
        except BrokenPipeError:  # the server is gone
            return


def _opened(path: str, fd: int | None) -> int:
    """A descriptor of the WAL file, opened again if the file was replaced."""
    inode = os.stat(path).st_ino
    if fd is not None and os.fstat(fd).st_ino != inode:
        os.close(fd)  # deleted and created again (every connection had closed)
        fd = None
    return os.open(path, os.O_RDONLY) if fd is None else fd


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    serve(sys.argv[1])
