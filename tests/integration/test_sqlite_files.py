"""Who may read a SQLite database's files, and which WAL file a server syncs.

The database, its WAL and shared-memory files are the owner's alone (``0600``) and so is the
directory made for them (``0700``); files that exist with more permissions are tightened. A
database path that is a symbolic link syncs the WAL beside the real file (where SQLite writes
it). The log of a dispatched agent is ``0600`` too.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from procs import Shell
from tenure import Service
from tenure.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from conftest import LiveServer


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_database_its_wal_and_its_directory_are_the_owners_alone(tmp_path: Path) -> None:
    os.umask(0o022)  # the usual umask: files 0644 unless made otherwise
    db = tmp_path / "state" / "tenure.db"
    store = SqliteStore(db)
    try:
        Service(store).acquire("alice", "a")  # the WAL and the shared memory exist now
        assert mode(db.parent) == 0o700
        for name in ("tenure.db", "tenure.db-wal", "tenure.db-shm"):
            assert mode(db.parent / name) == 0o600, name
    finally:
        store.close()


def test_files_and_a_directory_that_exist_are_tightened(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "shared"
    db = directory / "tenure.db"
    SqliteStore(db).close()
    os.chmod(directory, 0o755)
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db}{suffix}")
        path.touch()
        os.chmod(path, 0o644)
    with caplog.at_level(logging.WARNING, logger="tenure.store"):
        store = SqliteStore(db)
    try:
        assert mode(directory) == 0o700
        for suffix in ("", "-wal", "-shm"):
            assert mode(Path(f"{db}{suffix}")) == 0o600, suffix
        assert f"tightened {db} from 0644 to 0600" in caplog.text
        assert f"tightened {directory} from 0755 to 0700" in caplog.text
    finally:
        store.close()


def test_a_symlinked_database_syncs_the_real_wal(tmp_path: Path) -> None:
    real = tmp_path / "real" / "tenure.db"
    real.parent.mkdir()
    link = tmp_path / "link.db"
    link.symlink_to(real)
    store = SqliteStore(link)
    try:
        wal = store.defer_sync()  # the server's mode: each commit syncs the WAL file itself
        Service(store).acquire("alice", "a")  # commits, then syncs the WAL
        assert wal.syncs == 1
        assert wal.path.samefile(Path(f"{real}-wal"))  # SQLite writes it beside the real file
        assert not Path(f"{link}-wal").exists()
    finally:
        store.close()


@pytest.fixture
def alice(shell: Callable[..., Shell]) -> Shell:
    return shell("alice")


def test_a_dispatched_agents_log_is_the_owners_alone(
    alice: Shell, live_server: LiveServer, tmp_path: Path
) -> None:
    os.umask(0o022)
    with live_server.http(alice.token) as http:
        for item in ("given", "default"):
            assert http.post("/v1/items", json={"id": item, "title": item}).status_code == 201
    given = tmp_path / "agent.log"
    given.touch()
    os.chmod(given, 0o644)  # a log that exists is tightened too
    cmd = (sys.executable, "-c", "print('hello')")
    doc = alice.json("dispatch", "given", "--agent", "bot", "--log", str(given), "--", *cmd)
    assert doc["log"] == str(given) and mode(given) == 0o600
    doc = alice.json("dispatch", "default", "--agent", "bot2", "--", *cmd)  # the state dir's
    assert mode(Path(doc["log"])) == 0o600
