"""``client.lease(key, fences=[...])``: the new token is admitted before the block runs, so a
stale holder's write that arrives before the new holder's first write is refused."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import tenure
from tenure.fence import ConnectedFence, MemoryFence, SqliteFence, TableFence

KEY = "reports/nightly"
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def holders(live_server: Any) -> tuple[tenure.Client, tenure.Client, tenure.Client]:
    a = tenure.Client(live_server.url, token=live_server.token_for("worker-a"))
    b = tenure.Client(live_server.url, token=live_server.token_for("worker-b"))
    return a, b, tenure.Client(live_server.url, token=live_server.admin_token)


def stale_write(db: sqlite3.Connection, token: int, body: str) -> None:
    with db:
        TableFence().admit(db, KEY, token)
        db.execute("INSERT OR REPLACE INTO reports VALUES ('nightly', ?)", (body,))


def test_the_window_is_closed_on_acquire(live_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "reports.sqlite"
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE reports (name TEXT PRIMARY KEY, body TEXT)")
        TableFence().install(db)
    a, b, admin = holders(live_server)
    old = a.acquire(KEY, ttl_ms=30_000)
    stale_write(db, old.token, "by a")
    admin.force_release(KEY, reason="worker-a is paused")
    fence = ConnectedFence(lambda: sqlite3.connect(path))
    with b.lease(KEY, ttl=30, fences=[fence]) as lease:
        # a wakes up before b has written anything: refused all the same
        with pytest.raises(tenure.StaleToken) as refused:
            stale_write(db, old.token, "by a, late")
        assert refused.value.current_token == lease.token
        stale_write(db, lease.token, "by b")
    assert db.execute("SELECT body FROM reports").fetchall() == [("by b",)]


def test_without_it_the_window_is_open(live_server: Any) -> None:
    """The control: the same order of events, no admission on acquire, and the stale write
    lands because the fence has not seen the new token yet."""
    a, b, admin = holders(live_server)
    fence = MemoryFence()
    old = a.acquire(KEY, ttl_ms=30_000)
    fence.admit(KEY, old.token)
    admin.force_release(KEY, reason="worker-a is paused")
    with b.lease(KEY, ttl=30) as lease:
        assert fence.admit(KEY, old.token) == old.token  # admitted: the window
        fence.admit(KEY, lease.token)


def test_acquire_admits_too_and_the_async_client_the_same(live_server: Any) -> None:
    a, _, _ = holders(live_server)
    fences = [MemoryFence(), MemoryFence()]
    lease = a.acquire(KEY, ttl_ms=30_000, fences=fences)
    assert [f.current(KEY) for f in fences] == [lease.token, lease.token]
    a.release(KEY, lease.token)

    async def run() -> int:
        async with tenure.AsyncClient(live_server.url, token=live_server.token_for("w")) as c:
            got = await c.acquire("other", ttl_ms=30_000, fences=fences)
            assert fences[0].current("other") == got.token
            async with c.lease(KEY, ttl=30, fences=fences) as held:
                assert fences[1].current(KEY) == held.token
                return held.token

    token = asyncio.run(run())
    assert token > lease.token


def test_a_refused_admission_releases_the_lease(live_server: Any, tmp_path: Path) -> None:
    a, _, admin = holders(live_server)
    jammed = SqliteFence(tmp_path / "fence.sqlite")
    jammed.admit(KEY, 2**62)  # someone sent a huge token earlier
    with pytest.raises(tenure.StaleToken), a.lease(KEY, ttl=30, fences=[jammed]):
        pytest.fail("the block must not run")
    assert admin.get_lease(KEY).state == "released"
    with pytest.raises(tenure.StaleToken):
        a.acquire(KEY, ttl_ms=30_000, fences=[jammed])
    assert admin.get_lease(KEY).state == "released"


def test_fences_without_admit_are_refused_up_front(live_server: Any) -> None:
    a, _, admin = holders(live_server)
    with pytest.raises(tenure.InvalidRequest, match="ConnectedFence"):
        a.lease(KEY, fences=[TableFence()])
    with pytest.raises(tenure.InvalidRequest, match="no admit"):
        a.acquire(KEY, fences=[object()])  # type: ignore[list-item]
    with pytest.raises(tenure.NotFound):
        admin.get_lease(KEY)  # nothing was acquired
