"""``fence.transaction`` holds until its own commit: a commit or rollback inside the block is
refused (or found, and what followed it rolled back), several keys are fenced in one
transaction without deadlocks, and a fence row held open by a paused holder stalls the next
holder for at most ``lock_timeout``."""

# ruff: noqa: F811  (the ``db`` and ``db_of`` fixtures are imported, then asked for by name)

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from _fence_drivers import KEY, Db, db, db_of, publish, run  # noqa: F401

import tenure
from tenure.fence import FenceBusy, FenceMisuse, TableFence

fence = TableFence()


def commit_inside(conn: Any) -> None:
    """What a user's code inside the block might do: the driver's own ``commit()``."""
    conn.commit()


def test_a_commit_inside_the_block_never_lets_the_rest_of_the_block_land(db: Db) -> None:
    """Every driver: the part written after a commit inside the block is not committed, and
    the block fails loudly (FenceMisuse; psycopg and SQLAlchemy refuse the commit
    themselves)."""
    conn = db.connect()
    with pytest.raises(Exception) as caught, fence.transaction(conn, KEY, 5):
        publish(conn, "first batch")
        commit_inside(conn)
        publish(conn, "second batch")
    assert db.report() != "second batch"
    if db.kind in ("sqlite3", "psycopg2"):
        assert isinstance(caught.value, FenceMisuse) and caught.value.state == "ended_inside"


@pytest.mark.parametrize("kind", ["sqlite3", "psycopg2"])
def test_a_stale_holder_committing_inside_cannot_overwrite_the_newer_holder(
    db_of: Callable[[str], Db], kind: str
) -> None:
    """The incident: the stale holder (5) commits its first batch inside the block, the newer
    holder (6) writes, then the stale holder's second batch would overwrite it."""
    db = db_of(kind)
    stale, newer = db.connect(), db.connect()
    with pytest.raises(FenceMisuse, match=r"ended_inside|commit"), fence.transaction(stale, KEY, 5):
        publish(stale, "five, first batch")
        commit_inside(stale)  # sqlite3: refused here; psycopg2: commits, the marker is gone
        with fence.transaction(newer, KEY, 6):
            publish(newer, "six")
        publish(stale, "five, second batch")
    if kind == "sqlite3":  # the commit was refused: nothing of the stale block landed
        assert db.report() is None
        with fence.transaction(newer, KEY, 6):
            publish(newer, "six")
    assert db.report() == "six" and db.current() == 6
    with pytest.raises(tenure.StaleToken), fence.transaction(stale, KEY, 5):
        pass  # the connection is idle and usable again; the token is stale
    assert db.report() == "six"


def test_a_raw_commit_statement_inside_is_refused_on_sqlite(db_of: Callable[[str], Db]) -> None:
    db = db_of("sqlite3")
    conn = db.connect()
    with pytest.raises(FenceMisuse), fence.transaction(conn, KEY, 5):
        publish(conn, "first batch")
        conn.execute("COMMIT")
    assert db.report() is None and db.current() is None and not conn.in_transaction
    with fence.transaction(conn, KEY, 5):
        conn.execute("SAVEPOINT mine")  # the user's own savepoints still work
        publish(conn, "five")
        conn.execute("RELEASE SAVEPOINT mine")
    assert db.report() == "five"


def test_several_keys_in_one_transaction(db: Db) -> None:
    conn = db.connect()
    with fence.transaction(conn, {KEY: 5, "ledger/eu": 3}):
        publish(conn, "both")
    look = db.plain()
    assert db.current() == 5
    assert run(look, fence.sql("current", "sqlite"), ("ledger/eu",))[0] == 3
    with (
        pytest.raises(tenure.StaleToken) as caught,
        fence.transaction(conn, [("ledger/eu", 2), (KEY, 9)]),
    ):
        publish(conn, "stale on one key")
    assert (caught.value.key, caught.value.current_token) == ("ledger/eu", 3)
    assert db.current() == 5 and db.report() == "both"  # nothing of it landed


def test_several_keys_arguments_are_checked(db: Db) -> None:
    conn = db.connect()
    for keys, token in (
        ({KEY: 5}, 5),
        ([(KEY, 5), (KEY, 6)], None),
        ({}, None),
        ([KEY], None),
        (KEY, None),
    ):
        with pytest.raises(tenure.InvalidRequest):
            fence.transaction(conn, keys, token)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["psycopg", "psycopg2", "sqlalchemy-postgres"])
def test_two_multi_key_transactions_in_opposite_order_do_not_deadlock(
    db_of: Callable[[str], Db], kind: str
) -> None:
    db = db_of(kind)
    first, second = db.connect(), db.connect()
    entered = threading.Event()
    outcome: list[object] = []

    def other() -> None:
        entered.wait(10)
        try:
            with fence.transaction(second, [("b", 8), ("a", 8)]):
                pass
            outcome.append("admitted")
        except tenure.TenureError as error:
            outcome.append(error)

    thread = threading.Thread(target=other)
    thread.start()
    with fence.transaction(first, {"a": 7, "b": 7}):
        entered.set()
        time.sleep(0.3)  # let the other wait on the first row (not an assertion)
    thread.join(30)
    assert outcome == ["admitted"]


@pytest.mark.parametrize("kind", ["psycopg", "psycopg2", "sqlalchemy-postgres"])
def test_a_paused_holders_open_transaction_stalls_the_next_for_at_most_lock_timeout(
    db_of: Callable[[str], Db], kind: str
) -> None:
    """A holder paused inside its transaction keeps the fence row locked; the next holder's
    admission gives up after lock_timeout (FenceBusy), and once it gets in with its larger
    token, the paused holder's later writes are refused."""
    db = db_of(kind)
    bounded = TableFence(lock_timeout=0.5)
    paused, nxt = db.connect(), db.connect()
    outcome: list[object] = []

    def next_holder() -> None:
        try:
            with bounded.transaction(nxt, KEY, 6):
                publish(nxt, "six")
            outcome.append("admitted")
        except tenure.TenureError as error:
            outcome.append(error)

    with bounded.transaction(paused, KEY, 5):
        publish(paused, "five, first batch")
        thread = threading.Thread(target=next_holder)
        thread.start()
        thread.join(20)  # on a fence without the bound it would still be waiting here
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], FenceBusy), outcome
        assert outcome[0].reason == "lock_timeout" and "paused holder" in str(outcome[0])
    assert db.report() == "five, first batch"  # the paused holder came back first: it wins
    with bounded.transaction(nxt, KEY, 6):  # the next holder runs it again
        publish(nxt, "six")
    with pytest.raises(tenure.StaleToken), bounded.transaction(paused, KEY, 5):
        publish(paused, "five, late")
    assert (db.current(), db.report()) == (6, "six")


def test_lock_timeout_is_restored_for_the_rest_of_the_block(db_of: Callable[[str], Db]) -> None:
    db = db_of("psycopg")
    conn = db.connect()
    conn.execute("SET lock_timeout = '7s'")
    conn.commit()
    with TableFence(lock_timeout=0.5).transaction(conn, KEY, 5):
        assert conn.execute("SHOW lock_timeout").fetchone()[0] == "7s"
    assert conn.execute("SHOW lock_timeout").fetchone()[0] == "7s"


def test_bad_lock_timeouts_are_refused() -> None:
    for bad in (0, -1, True, "5", 10**6):
        with pytest.raises(tenure.InvalidRequest, match="lock_timeout"):
            TableFence(lock_timeout=bad)  # type: ignore[arg-type]
    assert TableFence(lock_timeout=None).lock_timeout is None
