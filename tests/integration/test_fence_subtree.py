"""Tree-aware fences: a token admitted for a subtree ``P/`` refuses older tokens of every key
under it, and its holder is admitted on those keys, in every fence store."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tenure
from redis_server import RedisServer
from tenure.fence import ConnectedFence, MemoryFence, RedisFence, SqliteFence, TableFence

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
STORES = ["memory", "sqlite", "postgres", "redis"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryFence()
    elif request.param == "sqlite":
        yield SqliteFence(tmp_path / "fence.sqlite")
    elif request.param == "postgres":
        pg = request.getfixturevalue("pg_databases")
        name = pg.create(migrated=False)
        url = pg.url(name)
        fence = ConnectedFence(lambda: psycopg.connect(url))
        fence.install()
        yield fence
        pg.drop_later(name)
    else:
        server = RedisServer()
        try:
            yield RedisFence(server.client())
        finally:
            server.stop()


def test_a_subtree_takeover_refuses_the_stale_per_file_holder(store: Any) -> None:
    """The file's holder had token 5 on ``src/app/x.py``; a subtree lease on ``src/`` took
    over with 9 (tenure issues a subtree a token above every token under it)."""
    assert store.admit("src/app/x.py", 5) == 5
    assert store.admit("src/", 9) == 9  # admitted on acquire of the subtree lease
    with pytest.raises(tenure.StaleToken) as refused:
        store.admit("src/app/x.py", 5)  # the per-file holder wakes up: refused
    assert (refused.value.token, refused.value.current_token) == (5, 9)
    with pytest.raises(tenure.StaleToken):
        store.admit("src/app/new.py", 8)  # a key the fence never saw is under src/ too
    assert store.admit("src/app/x.py", 9) == 9  # the subtree's holder writes the file
    assert store.admit("src/app/x.py", 12) == 12  # a later per-file lease: a larger token
    assert store.admit("srcfoo/x.py", 1) == 1  # not under src/
    assert store.admit("src", 1) == 1  # nor is the key src itself
    assert store.current("src/app/x.py") == 12


def test_nested_subtrees(store: Any) -> None:
    store.admit("a/b/", 20)
    store.admit("a/", 10)  # an older subtree above: its own key moves, nothing under a/b/
    with pytest.raises(tenure.StaleToken):
        store.admit("a/b/c", 15)
    assert store.admit("a/c", 15) == 15
    with pytest.raises(tenure.StaleToken):
        store.admit("a/b/", 19)


@pytest.fixture(params=["sqlite3", "psycopg"])
def conn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite3":
        db: Any = sqlite3.connect(tmp_path / "app.sqlite")
    else:
        pg = request.getfixturevalue("pg_databases")
        name = pg.create(migrated=False)
        db = psycopg.connect(pg.url(name))
        request.addfinalizer(lambda: pg.drop_later(name))
    TableFence().install(db)
    db.commit()
    yield db
    db.close()


def test_the_guarded_transaction_checks_the_subtrees_above(conn: Any) -> None:
    fence = TableFence()

    def write(key: str, token: int) -> AbstractContextManager[Any]:
        return fence.transaction(conn, key, token)

    with write("docs/guide.md", 3):
        pass
    with write("docs/", 7):
        pass
    with pytest.raises(tenure.StaleToken) as refused, write("docs/guide.md", 3):
        pytest.fail("the stale block must not run")
    assert refused.value.current_token == 7
    with write("docs/guide.md", 7):
        pass
    assert fence.current(conn, "docs/guide.md") == 7
    conn.commit()
