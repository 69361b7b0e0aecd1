"""`/v1/stats` and `/metrics` over HTTP agree with a scripted history, on each backend.

The exposition is parsed with the Prometheus project's own parser (prometheus-client).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import tenure
from procs import wait_for

if TYPE_CHECKING:
    from conftest import LiveServer

N_RELEASED, M_EXPIRED, K_FORCED = 4, 3, 2
ACQUIRED = N_RELEASED + M_EXPIRED + K_FORCED + 3  # and hot, fw twice


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scripted(live_server: LiveServer) -> tenure.Client:
    """N releases, M expiries (ttl 1 s), K force-releases; one conflict and one renewal on
    ``hot``; on ``fw`` one more release and fenced writes: accepted, duplicate, stale."""
    jo = tenure.Client(live_server.url, token=live_server.token_for("jo"))
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    for i in range(N_RELEASED):
        lease = jo.acquire(f"rel/{i}")
        jo.release(f"rel/{i}", lease.token)
    for i in range(M_EXPIRED):
        jo.acquire(f"exp/{i}", ttl_ms=1_000)
    for i in range(K_FORCED):
        jo.acquire(f"force/{i}")
        admin.force_release(f"force/{i}", reason="stuck")
    hot = jo.acquire("hot")
    with pytest.raises(tenure.LeaseHeld):
        admin.acquire("hot")
    jo.renew("hot", hot.token)
    old = jo.acquire("fw")  # the fenced register: one release, then a newer token
    jo.release("fw", old.token)
    new = jo.acquire("fw")
    jo.fenced_write("fw", new.token, {"v": 1}, op_id="op-1")
    jo.fenced_write("fw", new.token, {"v": 1}, op_id="op-1")  # a duplicate
    with pytest.raises(tenure.StaleToken):
        jo.fenced_write("fw", old.token, {"v": 0})
    wait_for(lambda: admin.stats()["endings"]["expired"] == M_EXPIRED, timeout=5)
    return admin


def test_stats_and_metrics_show_the_scripted_history(live_server: LiveServer) -> None:
    admin = scripted(live_server)
    stats = admin.stats()
    assert stats["endings"] == {
        "released": N_RELEASED + 1,
        "expired": M_EXPIRED,
        "force_released": K_FORCED,
        "taken_over": 0,
        "completed": 0,
    }
    ended = N_RELEASED + 1 + M_EXPIRED + K_FORCED
    assert stats["windows"]["1h"]["expired_share"] == round(M_EXPIRED / ended, 6)
    assert stats["acquisitions"] == ACQUIRED and stats["conflicts"] == 1
    assert stats["live_leases"] == 2 and stats["hottest_keys"] == [{"key": "hot", "conflicts": 1}]
    assert stats["expiring_holders"][0]["holder"] == "jo"

    with httpx.Client(base_url=live_server.url) as http:
        reply = http.get("/metrics", follow_redirects=False)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = samples(reply.text)
    for ending, n in stats["endings"].items():
        assert got[("tenure_lease_endings_total", (("ending", ending),))] == n
    assert got[("tenure_acquisitions_total", ())] == ACQUIRED
    assert got[("tenure_conflicts_total", ())] == 1
    assert got[("tenure_live_leases", ())] == 2
    assert got[("tenure_live_claims", ())] == 0
    assert got[("tenure_expired_share", (("window", "1h"),))] == round(M_EXPIRED / ended, 6)
    assert got[("tenure_renewals_total", ())] == 1
    written = "tenure_fenced_writes_total"
    assert got[(written, (("outcome", "accepted"),))] == 1
    assert got[(written, (("outcome", "duplicate"),))] == 1
    assert got[(written, (("outcome", "stale"),))] == 1
    hold = "tenure_hold_seconds_count"
    assert got[(hold, (("ending", "released"),))] == N_RELEASED + 1
    assert got[(hold, (("ending", "expired"),))] == M_EXPIRED
    assert got[(hold, (("ending", "force_released"),))] == K_FORCED
    expired_sum = got[("tenure_hold_seconds_sum", (("ending", "expired"),))]
    assert expired_sum == M_EXPIRED * 1.0  # each held its whole 1 s ttl


def test_request_latency_is_labelled_by_route_template_never_by_key(
    live_server: LiveServer,
) -> None:
    with live_server.http(live_server.admin_token) as http:
        http.post("/v1/leases/acquire", json={"key": "secret/key-name"}).raise_for_status()
        http.get("/v1/leases/secret/key-name").raise_for_status()
        assert http.get("/v1/nowhere").status_code == 404
        text = http.get("/metrics").text
    assert "secret" not in text and "jo" not in text
    got = samples(text)
    route = (("code", "2xx"), ("method", "GET"), ("route", "/v1/leases/{key:path}"))
    assert got[("tenure_request_duration_seconds_count", route)] == 1
    acquire = (("code", "2xx"), ("method", "POST"), ("route", "/v1/leases/acquire"))
    assert got[("tenure_request_duration_seconds_count", acquire)] == 1
    missing = (("code", "4xx"), ("method", "GET"), ("route", "unmatched"))
    assert got[("tenure_request_duration_seconds_count", missing)] == 1
    buckets = [
        float(dict(labels)["le"])
        for (name, labels) in got
        if name == "tenure_request_duration_seconds_bucket" and dict(labels)["route"] != "x"
    ]
    assert min(buckets) <= 0.001  # buckets made for millisecond latencies


def test_metrics_is_the_exact_path(live_server: LiveServer) -> None:
    with httpx.Client(base_url=live_server.url) as http:
        reply = http.get("/metrics", follow_redirects=False)
        assert reply.status_code == 200 and not reply.history
        assert reply.text.startswith("# HELP ")
        assert http.post("/metrics").status_code == 405


def test_stats_need_a_token_and_bad_timelines_change_nothing(live_server: LiveServer) -> None:
    with httpx.Client(base_url=live_server.url) as http:
        assert http.get("/v1/stats").status_code == 401
        assert http.get("/v1/stats/timeline").status_code == 401
    with live_server.http(live_server.admin_token) as http:
        before = http.get("/v1/events").json()
        for params in ({"bucket_ms": 999}, {"span_ms": 0}, {"bucket_ms": "x"}):
            bad = http.get("/v1/stats/timeline", params=params)
            assert bad.status_code == 422, params
        line = http.get("/v1/stats/timeline", params={"span_ms": 600_000, "bucket_ms": 60_000})
        assert line.status_code == 200 and len(line.json()["buckets"]) == 10
        assert http.get("/v1/events").json() == before
        assert abs(http.get("/v1/stats").json()["now"] - time.time() * 1000) < 5_000
