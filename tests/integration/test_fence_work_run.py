"""Admit on acquire for item claims (``items.work(fences=...)``) and for ``tenure run
--fence``: the new epoch or token is in the fence before the block or CMD runs."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tenure
from procs import Shell
from tenure.fence import SqliteFence, TableFence

KEY = "jobs/nightly"


def test_items_work_admits_the_epoch_before_the_block(live_server: Any, tmp_path: Path) -> None:
    client = tenure.Client(live_server.url, token=live_server.token_for("worker"))
    client.items.create("Render the report", id="report")
    fence = SqliteFence(tmp_path / "fence.sqlite")
    with client.items.work("report", ttl=30, fences=[fence]) as work:
        assert fence.current("items/report") == work.epoch  # before any write of the block
        work.complete({"ok": True})

    async def claim_again() -> int:
        async with tenure.AsyncClient(live_server.url, token=live_server.token_for("w2")) as c:
            await c.items.create("Again", id="again")
            async with c.items.work("again", ttl=30, fences=[fence]) as held:
                assert fence.current("items/again") == held.epoch
                return held.epoch

    assert asyncio.run(claim_again()) >= 1


def test_items_work_refused_by_a_fence_gives_the_claim_back(
    live_server: Any, tmp_path: Path
) -> None:
    client = tenure.Client(live_server.url, token=live_server.token_for("worker"))
    client.items.create("Jammed", id="jammed")
    fence = SqliteFence(tmp_path / "fence.sqlite")
    fence.admit("items/jammed", 2**62)
    with pytest.raises(tenure.StaleToken), client.items.work("jammed", fences=[fence]):
        pytest.fail("the block must not run")
    other = tenure.Client(live_server.url, token=live_server.token_for("other"))
    assert other.items.claim("jammed", ttl_ms=30_000).item.assignee == "other"  # given back


def test_run_fence_admits_the_token_before_cmd_starts(
    shell: Callable[..., Shell], tmp_path: Path
) -> None:
    db, seen = tmp_path / "app.sqlite", tmp_path / "seen"
    look = (
        "import sqlite3, sys; from tenure.fence import TableFence; "
        f"print(TableFence().current(sqlite3.connect({str(db)!r}), {KEY!r}))"
    )
    script = f'{sys.executable} -c "{look}" > {seen}; echo "$TENURE_LEASE_TOKEN" >> {seen}'
    done = shell("jo")("run", KEY, "--fence", str(db), "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    in_fence, token = seen.read_text().split()
    assert in_fence == token  # admitted before CMD ran


def test_run_refused_by_a_fence_does_not_run_cmd(
    shell: Callable[..., Shell], tmp_path: Path, live_server: Any
) -> None:
    db, ran = tmp_path / "app.sqlite", tmp_path / "ran"
    SqliteFence(db).admit(KEY, 2**62)
    done = shell("jo")("run", KEY, "--fence", f"sqlite:///{db}", "--", "touch", str(ran))
    assert done.returncode == 4 and "stale" in done.stderr, done.stderr
    assert not ran.exists()
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    assert admin.get_lease(KEY).state == "released"
    bad = shell("jo")("run", KEY, "--fence", "ftp://somewhere", "--", "true")
    assert bad.returncode == 2 and "--fence" in bad.stderr
    with sqlite3.connect(db) as conn:
        assert TableFence().current(conn, KEY) == 2**62
