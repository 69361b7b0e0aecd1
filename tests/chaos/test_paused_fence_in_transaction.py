"""A holder paused *inside* its guarded PostgreSQL transaction (``SIGSTOP`` past its ttl)
keeps the fence row locked. The next holder's admission waits at most ``lock_timeout`` and
gets ``FenceBusy`` (reason ``lock_timeout``) instead of hanging; then, in either order:

- ``paused-first``: the paused holder resumes and commits before anyone admitted a larger
  token (its write is ordered before the next holder's); the next holder runs again, writes,
  and the paused holder's next write is refused;
- ``next-first``: the database ends the paused holder's idle transaction
  (``idle_in_transaction_session_timeout``), the next holder is admitted and writes, and the
  paused holder's commit, when it resumes, fails: its write never lands.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _history import tokens_for
from _paused_fence_worker import connect, write
from test_paused_fence_guard import Holder, final_state, plain

import tenure
from procs import ServeAt
from tenure.fence import FenceBusy, TableFence

pytestmark = pytest.mark.slow

SCHEMA = "CREATE TABLE reports (name TEXT PRIMARY KEY, body TEXT NOT NULL, token BIGINT)"


@pytest.fixture(scope="module")
def tenure_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('tenure')}/tenure.sqlite"
    tenure.open_store(url).close()
    server = ServeAt(url)
    try:
        yield server.url, tokens_for(url, "A", "B")
    finally:
        server.kill()


@pytest.fixture
def pg_db(pg_databases: Any) -> Iterator[str]:
    name = pg_databases.create(False)
    url = pg_databases.url(name)
    setup = plain(url)
    setup.execute(SCHEMA)
    setup.execute(TableFence().sql("install", "sqlite"))
    setup.close()
    try:
        yield url
    finally:
        pg_databases.drop_later(name)


def admit_within_bound(conn: Any, fence: TableFence, key: str, token: int) -> FenceBusy:
    started = time.monotonic()
    with pytest.raises(FenceBusy) as caught, fence.transaction(conn, key, token):
        write(conn, "B", token)
    assert time.monotonic() - started < 20  # bounded (lock_timeout 1 s), never a hang
    return caught.value


def a_session_ended(url: str) -> None:
    """Until PostgreSQL has ended the idle transaction of A's session (bounded)."""
    with plain(url) as look:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            row = look.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'idle in transaction'"
            ).fetchone()
            if row[0] == 0:
                return
            time.sleep(0.05)
    raise AssertionError("A's idle transaction was never ended")


@pytest.mark.parametrize("kind", ["psycopg", "sqlalchemy"])
@pytest.mark.parametrize("order", ["paused-first", "next-first"])
def test_a_holder_paused_inside_its_transaction_stalls_no_one_past_the_bound(
    tenure_server: tuple[str, dict], pg_db: str, kind: str, order: str
) -> None:
    server, bearers = tenure_server
    key = f"reports/{kind}-{order}"
    fence = TableFence(lock_timeout=1.0)
    if order == "next-first":  # the operator's bound on idle transactions, for A's session
        with plain(pg_db) as setup:
            name = setup.execute("SELECT current_database()").fetchone()[0]
            setup.execute(f'ALTER DATABASE "{name}" SET idle_in_transaction_session_timeout = 6000')
    a = Holder(server, bearers["A"], kind, pg_db, key)
    b_conn = connect(kind, pg_db)
    try:
        a.line()  # held
        a.send("hold")
        assert a.line() == "inside"  # A wrote inside its open transaction
        a.signal(signal.SIGSTOP)  # and stops there; its heartbeat stops with it
        with tenure.Client(server, token=bearers["B"]) as client:
            b_token = client.acquire(key, ttl_ms=30_000, wait_ms=10_000).token  # A lapsed
        busy = admit_within_bound(b_conn, fence, key, b_token)
        assert busy.reason == "lock_timeout" and "paused holder" in str(busy)
        if order == "paused-first":
            a.signal(signal.SIGCONT)
            a.send("finish")
            assert a.line() == "wrote"  # admitted before B's token: ordered before B's write
            with fence.transaction(b_conn, key, b_token):
                write(b_conn, "B", b_token)
            a.send("write")
            assert a.line() == f"refused {b_token}"
        else:
            a_session_ended(pg_db)
            with fence.transaction(b_conn, key, b_token):
                write(b_conn, "B", b_token)
            a.signal(signal.SIGCONT)
            a.send("finish")
            assert a.line().startswith("failed")  # A's commit cannot land
        assert final_state(pg_db, key) == ("B", b_token, b_token)
    finally:
        a.close()
        b_conn.close()
        if hasattr(b_conn, "engine"):
            b_conn.engine.dispose()
