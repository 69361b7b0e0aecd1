"""Background WAL checkpoints (``tenure.store.sqlite.durable.checkpoints``) on a real SQLite
file."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tenure import Service
from tenure.store.sqlite.durable.checkpoints import BACKSTOP_PAGES
from tenure.store.sqlite.store import SqliteStore


def test_commits_leave_checkpoints_to_the_background_thread(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    store.writer.checkpoint_in_background()
    try:
        svc = Service(store)
        writer = store.writer.conn()
        assert writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        for i in range(300):  # more than the 1,000 pages after which a commit would checkpoint
            svc.acquire("alice", f"k{i}", meta={"pad": "x" * 3000})
        checkpointer = store.writer.checkpointer
        assert checkpointer is not None
        deadline = time.monotonic() + 5
        while checkpointer.runs < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert checkpointer.runs >= 2 and checkpointer.error is None
        assert os.path.getsize(tmp_path / "t.db") > 300 * 3000  # the pages reached the file
    finally:
        store.close()
    assert checkpointer._thread.is_alive() is False  # close stops it
    reopened = SqliteStore(tmp_path / "t.db")
    try:
        assert len(Service(reopened).list()) == 300
    finally:
        reopened.close()


def test_without_it_the_writer_checkpoints_as_sqlite_does_by_default(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    try:
        Service(store).acquire("alice", "k")
        assert store.writer.conn().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert store.writer.checkpointer is None
    finally:
        store.close()
