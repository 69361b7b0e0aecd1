"""``tenure fence reset``: after tenure's database is reset, tokens restart below what a fence
remembers (every key jammed); resetting the fence table lets the new tokens in."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from typing import Any

import psycopg
import pytest

import tenure
from procs import cli
from tenure.fence import TableFence
from tenure.service.principals import Principals

KEYS = ("reports/nightly", "reports/weekly")


def token_from(url: str, key: str) -> int:
    """A lease on ``key`` granted by a tenure on the database ``url``."""
    store = tenure.open_store(url)
    try:
        Principals(store).bootstrap("worker", "agent", ())
        svc = tenure.Service(store)
        return svc.acquire("worker", key, ttl_ms=60_000).token
    finally:
        store.close()


def connect(url: str) -> Any:
    if url.startswith("sqlite:///"):
        return sqlite3.connect(url.removeprefix("sqlite:///"))
    return psycopg.connect(url)


def test_reset_lets_a_new_tenure_database_in(fresh_url: Callable[[], str]) -> None:
    app_db = fresh_url()  # the user's own database, holding the fence table
    fence = TableFence()
    with closing(connect(app_db)) as conn:
        fence.install(conn)
        fence.admit(conn, KEYS[0], 40)
        fence.admit(conn, KEYS[1], 41)
        conn.commit()
    token = token_from(fresh_url(), KEYS[0])  # a brand new tenure database: token 1
    with closing(connect(app_db)) as conn, pytest.raises(tenure.StaleToken):
        fence.admit(conn, KEYS[0], token)

    done = cli("fence", "reset", "--db", app_db, "--key", KEYS[0], "--json")
    assert '"forgot": 1' in done.stdout
    with closing(connect(app_db)) as conn:
        assert fence.admit(conn, KEYS[0], token) == token
        assert fence.current(conn, KEYS[1]) == 41  # the other key is untouched
        conn.commit()
    cli("fence", "reset", "--db", app_db, "--all")
    with closing(connect(app_db)) as conn:
        assert [fence.current(conn, k) for k in KEYS] == [None, None]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "either --key KEY or --all"),
        (["--key", "k", "--all"], "either --key KEY or --all"),
        (["--all", "--table", "no-such;table"], "not a plain table name"),
        (["--all", "--table", "missing_table"], "could not be cleared"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    tmp_path: Any, args: list[str], says: str
) -> None:
    path = tmp_path / "app.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        TableFence().install(conn)
        TableFence().admit(conn, "k", 5)
        conn.commit()
    done = cli("fence", "reset", "--db", str(path), *args, check=False)
    assert done.returncode == 2 and says in " ".join(done.stderr.split()), done.stderr
    with closing(sqlite3.connect(path)) as conn:
        assert TableFence().current(conn, "k") == 5


def test_a_missing_database_is_not_created(tmp_path: Any) -> None:
    path = tmp_path / "nope.sqlite"
    done = cli("fence", "reset", "--db", str(path), "--all", check=False)
    assert done.returncode == 2 and "no SQLite database" in " ".join(done.stderr.split())
    assert not path.exists()
