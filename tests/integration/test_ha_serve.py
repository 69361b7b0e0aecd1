"""``tenure serve`` on a primary with an asynchronous standby: it says so at start, refuses to
start with ``--require-sync-standby``, and a URL that reaches only the standby is an outage
(the database watch's probe says "read-only standby"), not a ``500`` on every write."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import tenure
from procs import ServeAt

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from pg_pair import PgPair


@pytest.fixture(scope="module")
def pair() -> Iterator[PgPair]:
    started = PgPair.start(Path(tempfile.mkdtemp(prefix="tenure-pair-")), sync=False)
    try:
        tenure.open_store(started.url).close()  # migrated on the primary
        yield started
    finally:
        started.remove()


def test_serve_says_the_standby_is_asynchronous(pair: PgPair) -> None:
    server = ServeAt(pair.url)
    try:
        assert "1 asynchronous standby streaming" in server.stderr()
    finally:
        server.kill()


def test_require_sync_standby_refuses_an_asynchronous_one(pair: PgPair) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tenure.cli", "serve", "--db", pair.url, "--port", "0",
         "--require-sync-standby"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "--require-sync-standby" in done.stderr
    assert "asynchronous standby streaming" in done.stderr


def test_a_url_that_reaches_only_the_standby_is_an_outage(pair: PgPair) -> None:
    store = tenure.open_store(pair.url)
    try:
        store.connector.url = pair.standby.url
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="read-only standby"):
            store.probe()  # type: ignore[attr-defined]
    finally:
        store.close()
