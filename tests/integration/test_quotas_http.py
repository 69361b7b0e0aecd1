"""Per-principal bounds over HTTP, against a real server on each backend: a refusal is
``429 quota_exceeded`` (a problem naming the bound, what the caller has and the setting), and
the client raises :class:`tenure.QuotaExceeded` with those fields, at once (no retries)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import httpx
import pytest

import tenure
from conftest import LiveServer
from tenure.core.quotas import Quotas


@pytest.fixture
def bounded(store_url: str) -> Iterator[LiveServer]:
    server = LiveServer(store_url)
    quotas = Quotas(live_leases=2, items_per_minute=3, live_agents=1)
    server.settings = dataclasses.replace(server.settings, quotas=quotas)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_lease_past_the_bound_is_a_429_problem_and_the_client_raises_it(
    bounded: LiveServer,
) -> None:
    token = bounded.token_for("jo")
    jo = tenure.Client(bounded.url, token=token)
    jo.acquire("a")
    jo.acquire("b")
    with pytest.raises(tenure.QuotaExceeded) as over:
        jo.acquire("c")
    err = over.value
    assert (err.limit, err.current, err.setting, err.key) == (2, 2, "TENURE_MAX_LIVE_LEASES", "c")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=bounded.url, headers=headers) as http:
        reply = http.post("/v1/leases/acquire", json={"key": "c"})
    assert reply.status_code == 429 and reply.headers["retry-after"] == "1"
    assert reply.headers["content-type"].startswith("application/problem+json")
    problem = reply.json()
    assert problem["code"] == "quota_exceeded" and problem["setting"] == "TENURE_MAX_LIVE_LEASES"
    assert (problem["limit"], problem["current"]) == (2, 2)
    assert [lease.key for lease in jo.list_leases()] == ["a", "b"]


def test_items_and_dispatches_past_their_bounds_raise_quota_exceeded(
    bounded: LiveServer,
) -> None:
    jo = tenure.Client(bounded.url, token=bounded.token_for("jo"))
    for n in range(3):
        jo.items.create(f"job {n}", id=f"job{n}")
    with pytest.raises(tenure.QuotaExceeded) as over:
        jo.items.create("one too many")
    assert over.value.setting == "TENURE_MAX_ITEMS_PER_MINUTE"
    assert over.value.retry_after_s is not None and 1 <= over.value.retry_after_s <= 60
    jo.items.dispatch("job0", agent="a0")
    with pytest.raises(tenure.QuotaExceeded) as agents:
        jo.items.dispatch("job1", agent="a1")
    assert (agents.value.setting, agents.value.limit) == ("TENURE_MAX_LIVE_AGENTS", 1)
    assert jo.items.get("job1").item.assignee is None
