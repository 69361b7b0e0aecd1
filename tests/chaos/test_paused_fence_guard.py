"""A holder paused past its ttl never lands a write through ``fence.transaction``.

Holder A (its own process, a heartbeating ``tenure.Client`` lease) writes a report row through
the guard, then is ``SIGSTOP``ped. Its lease lapses; B acquires the key (a larger token) from
the same tenure server and writes through the guard on its own connection. A is ``SIGCONT``ed
and writes again, arriving

- ``after``: once B's write has committed;
- ``before``: after B admitted its token (an empty guarded transaction, what admitting on
  acquire does) and before B's first write;
- ``during``: while B's guarded transaction is open, so A's transaction waits for B's.

In each order A's write is refused with ``stale_token`` naming B's token, and the table holds
B's row. On SQLite (sqlite3), and on PostgreSQL through psycopg 3 and through SQLAlchemy.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _history import tokens_for
from _paused_fence_worker import connect, write

import tenure
from procs import ServeAt
from tenure.fence import TableFence

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("_paused_fence_worker.py")
KINDS = ("sqlite3", "psycopg", "sqlalchemy")
ORDERS = ("after", "before", "during")
SCHEMA = "CREATE TABLE reports (name TEXT PRIMARY KEY, body TEXT NOT NULL, token BIGINT)"


@pytest.fixture(scope="module")
def tenure_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    """One tenure server (SQLite store) for the module, with principals A and B."""
    url = f"sqlite:///{tmp_path_factory.mktemp('tenure')}/tenure.sqlite"
    tenure.open_store(url).close()
    server = ServeAt(url)
    try:
        yield server.url, tokens_for(url, "A", "B")
    finally:
        server.kill()


@pytest.fixture(params=KINDS)
def user_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The user's own database (kind, url) with the reports table and the fence table."""
    kind = str(request.param)
    if kind == "sqlite3":
        url, name = f"sqlite:///{tmp_path}/reports.sqlite", ""
    else:
        pg = request.getfixturevalue("pg_databases")
        name = pg.create(False)
        url = pg.url(name)
    setup = plain(url)
    setup.execute(SCHEMA)
    setup.execute(TableFence().sql("install", "sqlite"))
    setup.close()
    try:
        yield kind, url
    finally:
        if name:
            request.getfixturevalue("pg_databases").drop_later(name)


def plain(url: str) -> Any:
    """An autocommitting connection to look at the database from outside."""
    if url.startswith("sqlite"):
        import sqlite3

        return sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    import psycopg

    return psycopg.connect(url, autocommit=True)


def final_state(url: str, key: str) -> tuple[Any, ...]:
    conn = plain(url)
    try:
        marker = "?" if url.startswith("sqlite") else "%s"
        row = conn.execute("SELECT body, token FROM reports WHERE name = 'nightly'").fetchone()
        fence = conn.execute(f"SELECT token FROM tenure_fence WHERE key = {marker}", (key,))
        return (*row, fence.fetchone()[0])
    finally:
        conn.close()


def a_waits_for_b(url: str) -> None:
    """Until A's transaction waits for B's: seen in pg_stat_activity on PostgreSQL; on SQLite
    (whose busy wait shows nowhere) half a second, after which A either waits or comes later,
    which is the ``after`` order and refused all the same."""
    if url.startswith("sqlite"):
        time.sleep(0.5)
        return
    conn = plain(url)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if row[0]:
                return
            time.sleep(0.02)
        raise AssertionError("A's transaction never waited for B's")
    finally:
        conn.close()


class Holder:
    """The worker process A, driven over its stdin."""

    def __init__(self, server: str, bearer: str, kind: str, url: str, key: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), server, bearer, kind, url, key],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def line(self) -> str:
        assert self.proc.stdout is not None
        got = self.proc.stdout.readline().strip()
        if not got:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"the holder exited {self.proc.wait(10)}: {err}")
        return got

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def close(self) -> int:
        if self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.send("quit")
        try:
            return self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.mark.parametrize("order", ORDERS)
def test_a_paused_holder_never_lands_a_write_after_a_takeover(
    tenure_server: tuple[str, dict], user_db: tuple[str, str], order: str
) -> None:
    server, bearers = tenure_server
    kind, url = user_db
    key = f"reports/{kind}-{order}"
    fence = TableFence()
    a = Holder(server, bearers["A"], kind, url, key)
    b_conn = connect(kind, url)
    try:
        a_token = int(a.line().split()[1])
        a.send("write")
        assert a.line() == "wrote"
        a.signal(signal.SIGSTOP)  # A stops between writes; its heartbeat stops with it
        with tenure.Client(server, token=bearers["B"]) as client:
            b_token = client.acquire(key, ttl_ms=30_000, wait_ms=10_000).token  # after A lapsed
        assert b_token > a_token
        if order == "after":
            with fence.transaction(b_conn, key, b_token):
                write(b_conn, "B", b_token)
            a.signal(signal.SIGCONT)
            a.send("write")
            reply = a.line()
        elif order == "before":
            with fence.transaction(b_conn, key, b_token):
                pass  # B admits its token at once, before writing anything
            a.signal(signal.SIGCONT)
            a.send("write")
            reply = a.line()
            with fence.transaction(b_conn, key, b_token):
                write(b_conn, "B", b_token)
        else:
            replies: list[str] = []
            reader = threading.Thread(target=lambda: replies.append(a.line()))
            with fence.transaction(b_conn, key, b_token):
                a.signal(signal.SIGCONT)
                a.send("write")
                reader.start()
                a_waits_for_b(url)
                assert replies == []
                write(b_conn, "B", b_token)
            reader.join(30)
            reply = replies[0]
        assert reply == f"refused {b_token}"
        assert final_state(url, key) == ("B", b_token, b_token)
    finally:
        code = a.close()
        b_conn.close()
        if hasattr(b_conn, "engine"):
            b_conn.engine.dispose()  # SQLAlchemy's pool keeps the connection open otherwise
    assert code == 0
