"""WAL checkpoints in a background thread, off the commit path.

By default SQLite checkpoints inside the ``COMMIT`` that pushes the WAL past 1,000 pages: that
one commit copies the pages into the database file and syncs it, 100-350 ms on this kind of disk,
while every writer queued behind it waits. A server instead turns the writer connection's
automatic checkpoint into a far-off backstop and lets this thread run ``PASSIVE`` checkpoints
on its own connection a few times a second. A passive checkpoint never takes the write lock,
so commits go on while it copies and syncs. Durability is unchanged: a commit is durable once
its WAL frames are synced (``synchronous=FULL``), which the checkpoint does not touch.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

EVERY_S = 0.25
BACKSTOP_PAGES = 50_000  # the writer still checkpoints itself if the WAL ever grows this big


class Checkpointer:
    def __init__(self, connect: Callable[[], sqlite3.Connection], every_s: float = EVERY_S):
        self._connect = connect
        self._every_s = every_s
        self._stop = threading.Event()
        self.runs = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="tenure-checkpoint", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            conn = self._connect()
            while not self._stop.wait(self._every_s):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.runs += 1
        except BaseException as exc:  # the store closed under us, or the disk failed
            self.error = exc

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
