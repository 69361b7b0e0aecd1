"""Bounded work per authenticated request, against a real server on each backend.

Lists carry summaries within a byte budget and a page cap, with a cursor to go on; a filtered
reader of the event log advances past what it examined even when nothing matched; each
principal may hold a limited number of long-polls and event streams open (``429`` past them);
``/metrics`` reuses the database's figures for a while and may want a token of its own.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import tenure
from conftest import LiveServer
from procs import wait_for
from tenure.client import RetryPolicy
from tenure.settings import Limits, Settings

BODY = "b" * 60_000


@pytest.fixture
def bounded(store_url: str) -> Iterator[LiveServer]:
    """A server with small limits, so each is reached with a handful of requests."""
    limits = Limits(
        list_bytes=4_000, leases_page=5, event_scan=50, max_waits=2, metrics_token="scrape-me"
    )
    server = LiveServer(store_url)
    server.settings = dataclasses.replace(server.settings, limits=limits)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_item_lists_carry_summaries_within_the_budget(bounded: LiveServer) -> None:
    token = bounded.token_for("jo")
    jo = tenure.Client(bounded.url, token=token)
    made = [jo.items.create(f"{i} " + "t" * 200, body=BODY, priority=i).id for i in range(10)]
    with httpx.Client(base_url=bounded.url, headers={"Authorization": f"Bearer {token}"}) as http:
        first = http.get("/v1/items", params={"limit": 100}).json()
        assert 1 <= len(first["items"]) < 10 and first["truncated"] is True  # 4,000 bytes
        for summary in first["items"]:
            assert "body" not in summary and "result" not in summary
            assert summary["body_chars"] == len(BODY) and summary["has_result"] is False
        ids = [x["id"] for x in first["items"]]
        after = first["next"]
        while after:
            page = http.get("/v1/items", params={"limit": 100, "after": after}).json()
            ids += [x["id"] for x in page["items"]]
            after = page["next"]
        assert ids == made
        assert http.get(f"/v1/items/{made[0]}").json()["item"]["body"] == BODY  # whole item
        for cursor in ("not-a-cursor", "0", f"{1 << 63}:0:x", "1:2:a\nb", "1:2:"):
            bad = http.get("/v1/items", params={"after": cursor})
            assert bad.status_code == 422 and bad.json()["field"] == "after", cursor
    epoch = jo.items.claim(made[0]).item.epoch
    jo.items.progress(made[0], epoch, "half", 50, data={"log": "x" * 3_000})
    jo.items.complete(made[1], jo.items.claim(made[1]).item.epoch, result={"out": "y" * 50_000})
    for status in ("in_progress", "done"):
        with httpx.Client(base_url=bounded.url, headers={"Authorization": f"Bearer {token}"}) as h:
            (summary,) = h.get("/v1/items", params={"status": status}).json()["items"]
        assert len(str(summary)) < 2_000  # neither the progress data nor the result
        assert summary["has_result"] is (status == "done")
    assert summary["progress"] is None or "data" not in summary["progress"]
    with httpx.Client(base_url=bounded.url, headers={"Authorization": f"Bearer {token}"}) as h:
        (progressing,) = h.get("/v1/items", params={"status": "in_progress"}).json()["items"]
        ready = h.get("/v1/ready", params={"limit": 100}).json()
    assert progressing["progress"]["message"] == "half" and "data" not in progressing["progress"]
    assert ready["items"] and all("body" not in x for x in ready["items"])
    assert ready["truncated"] is True and ready["next"] is None  # 8 ready, over 4,000 bytes
    listed = jo.items.list(limit=100)  # the client fetches the pages the budget cut
    assert [x.id for x in listed] == made and all(x.body == "" for x in listed)
    assert [x.id for x in jo.items.list(limit=3)] == made[:3]


def test_lease_lists_are_capped_per_page(bounded: LiveServer) -> None:
    token = bounded.token_for("jo")
    jo = tenure.Client(bounded.url, token=token)
    keys = [f"k/{i:02d}" for i in range(8)]
    for key in keys:
        jo.acquire(key)
    with httpx.Client(base_url=bounded.url, headers={"Authorization": f"Bearer {token}"}) as http:
        page = http.get("/v1/leases", params={"limit": 100_000}).json()
        assert [x["key"] for x in page["leases"]] == keys[:5]
        assert page["truncated"] is True and page["next"] == keys[4]
        rest = http.get("/v1/leases", params={"limit": 100_000, "after": page["next"]}).json()
        assert [x["key"] for x in rest["leases"]] == keys[5:] and rest["truncated"] is False
    assert [x.key for x in jo.list_leases()] == keys  # the client goes on by itself
    for key in ("big/1", "big/2"):
        jo.acquire(key, meta={"note": "m" * 4000})
    with httpx.Client(base_url=bounded.url, headers={"Authorization": f"Bearer {token}"}) as http:
        page = http.get("/v1/leases", params={"prefix": "big/"}).json()
    assert [x["key"] for x in page["leases"]] == ["big/1"]  # over the budget: one, and on
    assert page["truncated"] is True and page["next"] == "big/1"
    assert [x.key for x in jo.list_leases(prefix="big/")] == ["big/1", "big/2"]


def test_a_filtered_reader_advances_past_what_it_examined(bounded: LiveServer) -> None:
    token = bounded.token_for("jo")
    jo = tenure.Client(bounded.url, token=token)
    for i in range(60):  # more events than one read examines (50)
        jo.release(f"e/{i}", jo.acquire(f"e/{i}").token)
    store = tenure.open_store(bounded.db)
    try:
        head = store.last_event_id()
    finally:
        store.close()
    assert head > 100  # acquired and released, sixty times
    with httpx.Client(base_url=bounded.url, headers={"Authorization": f"Bearer {token}"}) as http:
        miss = http.get("/v1/events", params={"holder": "nobody", "after": 0}).json()
        assert miss["events"] == [] and 0 < miss["next"] <= 50  # moved on, though none matched
        cursor, reads = 0, 0
        while cursor < head:
            got = http.get("/v1/events", params={"type": "nothing", "after": cursor}).json()
            assert got["events"] == [] and got["next"] > cursor
            cursor, reads = got["next"], reads + 1
        assert cursor == head and reads >= 2  # bounded reads, each one further on
        waited = http.get(
            "/v1/events", params={"holder": "nobody", "after": head, "wait_ms": 300}
        ).json()
        assert waited == {"events": [], "next": head}  # caught up: waits, never past the head
        mine = http.get("/v1/events", params={"holder": "jo", "after": 0, "limit": 5}).json()
        assert len(mine["events"]) == 5 and mine["next"] == mine["events"][-1]["id"]


def test_open_waits_are_capped_per_principal(bounded: LiveServer) -> None:
    token, other = bounded.token_for("jo"), bounded.token_for("al")
    auth = {"Authorization": f"Bearer {token}"}
    with ExitStack() as streams, httpx.Client(base_url=bounded.url, timeout=10) as http:
        for _ in range(2):
            reply = streams.enter_context(http.stream("GET", "/v1/events/stream", headers=auth))
            assert reply.status_code == 200
        third = http.get("/v1/events/stream", headers=auth)
        assert third.status_code == 429 and third.headers["retry-after"] == "1"
        assert third.json()["code"] == "too_many_waits" and third.json()["limit"] == 2
        polled = http.get("/v1/events", params={"wait_ms": 1000}, headers=auth)
        assert polled.status_code == 429
        acquire = {"key": "w", "wait_ms": 1000}
        assert http.post("/v1/leases/acquire", json=acquire, headers=auth).status_code == 429
        assert http.get("/v1/events", headers=auth).status_code == 200  # no wait: no slot
        no_retry = RetryPolicy(attempts=1)
        with pytest.raises(tenure.errors.TooManyWaits):
            tenure.Client(bounded.url, token=token, retry=no_retry).events(wait_ms=500)
        al = {"Authorization": f"Bearer {other}"}
        with http.stream("GET", "/v1/events/stream", headers=al) as mine:
            assert mine.status_code == 200  # the cap is per principal
    with httpx.Client(base_url=bounded.url, timeout=10) as http:  # the streams closed
        wait_for(
            lambda: http.get("/v1/events", params={"wait_ms": 10}, headers=auth).status_code == 200,
            timeout=5,
        )


def test_long_polls_on_the_hot_path_hold_a_slot_until_they_end(bounded: LiveServer) -> None:
    token = bounded.token_for("jo")
    holder = tenure.Client(bounded.url, token=bounded.token_for("al"))
    holder.acquire("busy", ttl_ms=60_000)
    auth = {"Authorization": f"Bearer {token}"}
    answers: list[int] = []

    def poll() -> None:
        with httpx.Client(base_url=bounded.url, timeout=10) as http:
            reply = http.post(
                "/v1/leases/acquire", json={"key": "busy", "wait_ms": 1500}, headers=auth
            )
            answers.append(reply.status_code)

    threads = [threading.Thread(target=poll) for _ in range(2)]
    for t in threads:
        t.start()
    app = bounded._server.config.app if bounded._server else None
    wait_for(lambda: app.tenure.slots.open("jo") == 2, timeout=5)  # both are waiting
    with httpx.Client(base_url=bounded.url, timeout=10) as http:
        probe = http.post("/v1/leases/acquire", json={"key": "other", "wait_ms": 100}, headers=auth)
        assert probe.status_code == 429 and probe.json()["code"] == "too_many_waits"
        assert http.post("/v1/leases/acquire", json={"key": "other"}, headers=auth).is_success
    for t in threads:
        t.join()
    assert answers == [409, 409]  # the two waits ran to their end
    wait_for(lambda: app.tenure.slots.open("jo") == 0, timeout=5)  # and gave their slots back


def test_metrics_want_their_token_and_reuse_the_figures(bounded: LiveServer) -> None:
    jo = tenure.Client(bounded.url, token=bounded.token_for("jo"))
    jo.acquire("m/1")
    with httpx.Client(base_url=bounded.url) as http:
        refused = http.get("/metrics")
        assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"
        wrong = http.get("/metrics", headers={"Authorization": "Bearer not-it"})
        assert wrong.status_code == 401
        scrape = {"Authorization": "Bearer scrape-me"}
        assert live_leases(http.get("/metrics", headers=scrape).text) == 1
        jo.acquire("m/2")
        assert live_leases(http.get("/metrics", headers=scrape).text) == 1  # cached (5 s)


def test_metrics_are_open_without_a_token(live_server: LiveServer) -> None:
    assert httpx.get(f"{live_server.url}/metrics").status_code == 200


def test_limits_come_from_the_environment() -> None:
    env = {"TENURE_LIST_BYTES": "4096", "TENURE_MAX_WAITS": "3", "TENURE_METRICS_TOKEN": "t"}
    limits = Settings.from_env(env).limits
    assert (limits.list_bytes, limits.max_waits, limits.metrics_token) == (4096, 3, "t")
    assert Settings.from_env({}).limits == Limits()
    with pytest.raises(ValueError, match="TENURE_EVENT_SCAN"):
        Limits.from_env({"TENURE_EVENT_SCAN": "0"})


def live_leases(text: str) -> float:
    for family in text_string_to_metric_families(text):
        if family.name == "tenure_live_leases":
            return family.samples[0].value
    raise AssertionError("no tenure_live_leases")


def test_waits_hold_no_worker_thread(live_server: LiveServer) -> None:
    """More open waits than the server has worker threads (40), one per principal: a request
    that works still gets its answer."""
    tokens = [live_server.token_for(f"w{i}") for i in range(45)]
    with ExitStack() as opened, httpx.Client(base_url=live_server.url, timeout=10) as http:
        for token in tokens:
            auth = {"Authorization": f"Bearer {token}"}
            assert (
                opened.enter_context(
                    http.stream("GET", "/v1/events/stream", headers=auth)
                ).status_code
                == 200
            )
        admin = {"Authorization": f"Bearer {live_server.admin_token}"}
        reply = http.post("/v1/leases/acquire", json={"key": "free"}, headers=admin)
        assert reply.status_code == 200
