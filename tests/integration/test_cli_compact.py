"""``tenure admin compact`` as real processes: through a real server as an admin (anyone else
gets exit 1), the route over HTTP (bad input 422, changing nothing), ``--db`` on the database
directly, and the server's own schedule (``TENURE_COMPACT_EVERY_S``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import tenure
from procs import Shell, doc, fails, ok, wait_for
from tenure.core.policy import Policy, PolicySet
from tenure.settings import Limits, Settings

if TYPE_CHECKING:
    from conftest import LiveServer

#: every ended lease and every op_id is due at once (the retention and window are 1 ms)
EAGER = PolicySet(Policy(lease_retention=1, op_window=1, default_ttl=1_000, min_ttl=1_000))
EAGER_JSON = json.dumps({"default": {"lease_retention": 1, "op_window": 1}})


@pytest.fixture
def eager_server(store_url: str) -> Iterator[LiveServer]:
    from conftest import LiveServer

    server = LiveServer(store_url)
    server.settings = Settings(  # no schedule: the tests run the passes
        db=store_url,
        port=server.port,
        policy=EAGER,
        compact_every_s=0,
        events_max_age_ms=1,
        audit_max_age_ms=1,
        limits=Limits(metrics_cache_ms=1),
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _ended_lease(user: Shell, key: str) -> int:
    """Acquire ``key`` for a second and release it; its token, once its deadline passed."""
    token: int = doc(user, "lock", "acquire", key, "--ttl", "1s")["lease"]["token"]
    ok(user, "lock", "release", key)
    time.sleep(1.1)  # its deadline passes: the row is idle
    return token


def test_an_admin_compacts_through_the_server(eager_server: LiveServer, tmp_path: Path) -> None:
    root = Shell(eager_server.url, eager_server.admin_token, tmp_path / "root")
    bob = Shell(eager_server.url, eager_server.token_for("bob"), tmp_path / "bob")
    token = _ended_lease(bob, "jobs/old")
    assert "only admins" in fails(bob, 1, "admin", "compact")
    done = doc(root, "admin", "compact")
    assert (done["leases"], done["retired_token"], done["complete"]) == (1, token, True)
    assert set(done) == {
        "leases", "fenced_ops", "item_ops", "events", "agents", "retired_token", "batches",
        "complete", "elapsed_ms",
    }  # fmt: skip
    assert doc(bob, "lock", "acquire", "jobs/old", "--ttl", "5m")["lease"]["token"] > token
    shown = ok(root, "admin", "compact", "--batch", "10").splitlines()
    assert shown[0].split() == ["leases", "0"]


def test_the_route_over_http(eager_server: LiveServer, tmp_path: Path) -> None:
    bob = Shell(eager_server.url, eager_server.token_for("bob"), tmp_path / "bob")
    _ended_lease(bob, "jobs/old")
    carol = eager_server.token_for("carol")
    with eager_server.http(carol) as http:
        refused = http.post("/v1/admin/compact", json={})
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    with eager_server.http(eager_server.admin_token) as http:
        for body in ({"batch": -1}, {"batch": 0}, {"max_batches": 0}, {"batch": "5"}, {"x": 1}):
            bad = http.post("/v1/admin/compact", json=body)
            assert bad.status_code == 422 and bad.json()["code"] == "invalid_request", body
        assert http.get("/v1/leases/jobs/old").status_code == 200  # nothing changed
        done = http.post("/v1/admin/compact", json={"batch": 5, "max_batches": 2})
        assert done.status_code == 200 and done.json()["leases"] == 1
        assert http.get("/v1/leases/jobs/old").status_code == 404


def test_directly_on_the_database(store_url: str, tmp_path: Path) -> None:
    store = tenure.open_store(store_url)
    try:
        service = tenure.Service(store)
        token = service.acquire("alice", "jobs/old", ttl_ms=1_000).token
        service.release("alice", "jobs/old", token)
    finally:
        store.close()
    time.sleep(1.1)
    trusted = Shell("http://127.0.0.1:9", None, tmp_path / "ops")  # no server at all
    done = trusted.json("admin", "compact", "--db", store_url, TENURE_POLICY=EAGER_JSON)
    assert (done["leases"], done["retired_token"]) == (1, token)
    again = trusted.json("admin", "compact", "--db", store_url, TENURE_POLICY=EAGER_JSON)
    assert again["leases"] == 0 and again["retired_token"] == token


def test_the_server_compacts_on_its_schedule(store_url: str, tmp_path: Path) -> None:
    from conftest import LiveServer

    server = LiveServer(store_url)
    server.settings = Settings(db=store_url, port=server.port, policy=EAGER, compact_every_s=1)
    server.start()
    try:
        bob = Shell(server.url, server.token_for("bob"), tmp_path / "bob")
        token = _ended_lease(bob, "jobs/old")
        with server.http(server.admin_token) as http:
            wait_for(lambda: http.get("/v1/leases/jobs/old").status_code == 404, 20, "a pass")
        assert doc(bob, "lock", "acquire", "jobs/old")["lease"]["token"] > token
    finally:
        server.stop()


COUNTERS = ("tenure_lease_endings_total", "tenure_acquisitions_total", "tenure_conflicts_total")


def test_metrics_stay_right_after_the_events_and_records_are_gone(
    eager_server: LiveServer, tmp_path: Path
) -> None:
    bob = Shell(eager_server.url, eager_server.token_for("bob"), tmp_path / "bob")
    carol = eager_server.token_for("carol")
    doc(bob, "lock", "acquire", "jobs/hot", "--ttl", "5s")
    deadline = time.monotonic() + 5
    with eager_server.http(carol) as http:  # two conflicts well inside the 5 s, however slow
        for _ in range(2):  # the machine is (a CLI call can take seconds under load)
            held = http.post("/v1/leases/acquire", json={"key": "jobs/hot"})
            assert (held.status_code, held.json()["code"]) == (409, "lease_held"), held.text
    ok(bob, "lock", "release", "jobs/hot")
    _ended_lease(bob, "jobs/old")
    time.sleep(max(0.0, deadline - time.monotonic()) + 0.1)  # both deadlines passed

    def counters() -> list[str]:
        with eager_server.http() as http:
            text = http.get("/metrics").text
        return sorted(line for line in text.splitlines() if line.startswith(COUNTERS))

    before = counters()
    assert "tenure_conflicts_total 2" in before
    with eager_server.http(eager_server.admin_token) as http:
        done = http.post("/v1/admin/compact", json={}).json()
        # the records are gone, and the events (the pass or the reaper's pruning took them)
        assert done["leases"] == 2
        assert http.get("/v1/events", params={"type": "acquired"}).json()["events"] == []
    time.sleep(0.01)  # (the metrics cache lasts 1 ms)
    assert counters() == before
