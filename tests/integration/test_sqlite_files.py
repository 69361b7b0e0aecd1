"""Who may read a SQLite database's files, and which WAL file a server syncs.

tenure sets the mode only of what it creates: a new database, its WAL and shared-memory files
are the owner's alone (``0600``) and so are the directories made for them (``0700``); files and
directories that existed keep their mode (a database others may read gets a warning). A
database path that is a symbolic link syncs the WAL beside the real file (where SQLite writes
it). The log of a dispatched agent that tenure creates is ``0600`` too.
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
from tenure.settings import Settings
from tenure.store.dburl import DatabaseUnreachable
from tenure.store.open import open_store
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


def test_an_existing_directory_keeps_its_mode_and_the_new_files_are_private(
    tmp_path: Path,
) -> None:
    os.umask(0o022)
    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, 0o755)
    db = directory / "tenure.db"
    store = SqliteStore(db)
    try:
        Service(store).acquire("alice", "a")
        assert mode(directory) == 0o755  # not tenure's: left as it was
        for suffix in ("", "-wal", "-shm"):
            assert mode(Path(f"{db}{suffix}")) == 0o600, suffix
    finally:
        store.close()


def test_an_existing_database_keeps_its_mode_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "tenure.db"
    SqliteStore(db).close()
    os.chmod(db, 0o644)  # the owner's choice: tenure does not undo it
    with caplog.at_level(logging.WARNING, logger="tenure.store"):
        store = SqliteStore(db)
    try:
        Service(store).acquire("alice", "a")
        assert mode(db) == 0o644
        assert f"{db} is mode 0644" in caplog.text
    finally:
        store.close()


def test_the_default_data_directory_and_those_above_it_are_made_private(
    tmp_path: Path,
) -> None:
    os.umask(0o022)
    settings = Settings.from_env({"HOME": str(tmp_path)})
    assert settings.data_dir == tmp_path / ".local/share/tenure"
    open_store(settings.db).close()
    for made in (".local", ".local/share", ".local/share/tenure"):
        assert mode(tmp_path / made) == 0o700, made
    assert mode(tmp_path / ".local/share/tenure/tenure.db") == 0o600


def test_a_directory_that_is_not_ours_is_never_changed(tmp_path: Path) -> None:
    """A database in a read-only directory cannot be created; the directory is not touched."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    os.chmod(directory, 0o555)
    try:
        if os.geteuid() != 0:  # root may create files anywhere
            with pytest.raises(DatabaseUnreachable):
                open_store(f"sqlite:///{directory}/tenure.db")
        else:
            open_store(f"sqlite:///{directory}/tenure.db").close()
        assert mode(directory) == 0o555
    finally:
        os.chmod(directory, 0o755)


def test_a_symlinked_database_syncs_the_real_wal(tmp_path: Path) -> None:
    real = tmp_path / "real" / "tenure.db"
    real.parent.mkdir()
    link = tmp_path / "link.db"
    link.symlink_to(real)
    store = SqliteStore(link)
    try:
        wal = store.writer.defer_sync()  # the server's mode: each commit syncs the WAL file itself
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
    os.chmod(given, 0o644)  # a log that exists is the user's: its mode is left as it is
    cmd = (sys.executable, "-c", "print('hello')")
    doc = alice.json("dispatch", "given", "--agent", "bot", "--log", str(given), "--", *cmd)
    assert doc["log"] == str(given) and mode(given) == 0o644
    doc = alice.json("dispatch", "default", "--agent", "bot2", "--", *cmd)  # the state dir's
    assert mode(Path(doc["log"])) == 0o600
