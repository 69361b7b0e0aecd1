"""A call whose commit was in flight when the database went away is told the truth: ``503``,
``outcome: unknown`` and ``Retry-After`` — never a success it cannot prove, and never the plain
"nothing was done" ``503`` that invites any caller to repeat it.

A primary with a synchronous standby (``scripts/pg_pair.py``, the embedded binaries); the
standby is stopped, so a COMMIT waits on the primary for it; the server's backend is terminated
while it waits, as a failover cuts it. PostgreSQL has then committed locally: the call happened,
and the server could not know. An error answered for an earlier statement is a known failure
(a plain ``503``).
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

import tenure
from tenure.client import RetryPolicy
from tenure.client._call import Call, Reply, Safety
from tenure.client._transport import retryable
from tenure.errors import Unavailable

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from pg_pair import PgPair

if TYPE_CHECKING:
    from conftest import LiveServer


@pytest.fixture
def pair() -> Iterator[PgPair]:
    # Not under pytest's tmp_path: the servers run as another user, who cannot enter it.
    started = PgPair.start(Path(tempfile.mkdtemp(prefix="tenure-pair-")), sync=True)
    try:
        yield started
    finally:
        started.remove()


@pytest.fixture
def server(pair: PgPair) -> Iterator[LiveServer]:
    from conftest import LiveServer

    live = LiveServer(pair.url).start()
    try:
        yield live
    finally:
        live.stop()


def _cut_the_waiting_commit(pair: PgPair, done: threading.Event) -> list[int]:
    """Terminate the backends that wait for the (stopped) synchronous standby."""
    cut: list[int] = []
    with psycopg.connect(pair.primary.url, autocommit=True) as admin:
        admin.execute("SET synchronous_commit = local")
        deadline = time.monotonic() + 30
        while not cut and time.monotonic() < deadline and not done.is_set():
            rows = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
            ).fetchall()
            for (pid,) in rows:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                cut.append(pid)
            time.sleep(0.02)
    return cut


def _cutting(pair: PgPair) -> tuple[threading.Thread, threading.Event, list[list[int]]]:
    done, out = threading.Event(), [[]]

    def run() -> None:
        out[0] = _cut_the_waiting_commit(pair, done)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, out


def _read_back(server: LiveServer, key: str) -> int:
    with server.http(server.admin_token) as http:
        for _ in range(100):
            got = http.get(f"/v1/leases/{key}")
            if got.status_code in (200, 404):
                return got.status_code
            time.sleep(0.1)
    raise AssertionError(f"GET {key} never answered: {got.text}")


def test_a_commit_cut_off_is_answered_503_outcome_unknown(pair: PgPair, server: LiveServer) -> None:
    pair.standby.stop()  # every COMMIT now waits for it
    thread, done, cut = _cutting(pair)
    with server.http(server.admin_token) as http:
        reply = http.post("/v1/leases/acquire", json={"key": "jobs/doubt", "ttl_ms": 30_000})
    done.set()
    thread.join(30)
    assert cut[0], "no commit waited for the standby"
    assert reply.status_code == 503, reply.text
    body: dict[str, Any] = reply.json()
    assert (body["code"], body["outcome"]) == ("unavailable", "unknown")
    assert "may or may not have happened" in body["detail"]
    assert reply.headers["Retry-After"].isdigit()
    # Why "unknown" is the truth: PostgreSQL committed it locally.
    assert _read_back(server, "jobs/doubt") == 200


def test_the_client_does_not_repeat_an_unsafe_call_whose_outcome_is_unknown(
    pair: PgPair, server: LiveServer
) -> None:
    pair.standby.stop()
    thread, done, cut = _cutting(pair)
    client = tenure.Client(
        server.url, token=server.admin_token, retry=RetryPolicy(attempts=4, budget=20)
    )
    try:
        with pytest.raises(Unavailable) as raised:
            client.acquire("jobs/doubt-client", ttl_ms=30_000)
    finally:
        done.set()
        thread.join(30)
    assert raised.value.outcome == "unknown"
    assert len(cut[0]) == 1  # one commit waited: the call was not repeated


def test_a_plain_503_is_repeated_an_unknown_one_only_when_safe() -> None:
    def call(safety: Safety) -> Call[Any]:
        return Call("acquire", "POST", "/v1/x", parse=lambda d: d, safety=safety)

    plain = Reply(503, {"code": "unavailable"})
    doubt = Reply(503, {"code": "unavailable", "outcome": "unknown"})
    assert retryable(call(Safety.UNSAFE), reply=plain)
    assert not retryable(call(Safety.UNSAFE), reply=doubt)
    assert retryable(call(Safety.IDEMPOTENT), reply=doubt)
