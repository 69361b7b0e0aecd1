"""Statistics agree with a scripted history, on every backend; retention keeps the totals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tenure
from contract._items import ADMIN, ALICE, BOB, org
from tenure import Service
from tenure.core.retention import KEPT_BY_AGE
from tenure.errors import InvalidRequest
from tenure.store.sqlite.stats import first_event_at
from tenure.store.sqlite.store import SqliteStore

HOUR = 3_600_000


def script(service: Service, clock: tenure.FakeClock) -> dict[str, Any]:
    """A known history: what each ending, acquisition and conflict count must be."""
    for i in range(4):  # 4 releases, each held 1 s
        lease = service.acquire(ALICE, f"rel/{i}", ttl_ms=10_000)
        clock.advance(1_000)
        service.release(ALICE, f"rel/{i}", lease.token)
    for i in range(3):  # 3 expiries of bob's, each held its full 2 s ttl
        service.acquire(BOB, f"exp/{i}", ttl_ms=2_000)
    clock.advance(2_001)
    assert len(service.reap()) == 3
    for i in range(2):  # 2 force-releases, held 5 s
        service.acquire(ALICE, f"force/{i}", ttl_ms=30_000)
    clock.advance(5_000)
    for i in range(2):
        service.force_release(ADMIN, f"force/{i}", "stuck")
    service.items.create(ALICE, "work", id="w1")  # 1 completion, held 3 s
    claim = service.items.claim(ALICE, "w1", ttl_ms=30_000)
    clock.advance(3_000)
    service.items.complete(ALICE, "w1", claim.lease.token)
    service.items.create(ALICE, "work", id="w2")  # 1 takeover of a lapsed claim, held 1 s
    service.items.claim(ALICE, "w2", ttl_ms=1_000)
    clock.advance(1_001)
    service.items.claim(BOB, "w2", ttl_ms=60_000, takeover=True, reason="alice is gone")
    service.acquire(ALICE, "hot", ttl_ms=60_000)  # 3 conflicts on hot, 1 on w2's key
    for _ in range(3):
        with pytest.raises(tenure.LeaseHeld):
            service.acquire(BOB, "hot")
    with pytest.raises(tenure.LeaseHeld):
        service.items.claim(ALICE, "w2")
    return {
        "endings": {
            "released": 4,
            "expired": 3,
            "force_released": 2,
            "taken_over": 1,
            "completed": 1,
        },
        # 4 + 3 + 2 = 9 plain leases, 2 claims, 1 re-claim by takeover, 1 hot key
        "acquisitions": 13,
        "conflicts": 4,
        "live_leases": 2,  # hot, and bob's claim of w2
        "live_claims": 1,
    }


@pytest.fixture
def svc(make_service: Callable[..., Service], clock: tenure.FakeClock) -> Service:
    """The people of the org, and an event log that starts after their creation."""
    service = org(make_service)
    clock.advance(1)  # (their record is kept by age only: past an age of 0)
    while service.prune_events(max_count=0, max_age_ms=0, audit_age_ms=0):
        pass
    return service


def test_stats_show_exactly_the_scripted_history(svc: Service, clock: tenure.FakeClock) -> None:
    want = script(svc, clock)
    stats = svc.stats()
    assert stats["now"] == clock.now_ms()
    for field in ("endings", "acquisitions", "conflicts", "live_leases", "live_claims"):
        assert stats[field] == want[field], field
    for window in ("1h", "24h"):
        w = stats["windows"][window]
        assert w["endings"] == want["endings"]
        assert w["ended"] == 11
        assert w["expired_share"] == pytest.approx(3 / 11)
        assert (w["acquisitions"], w["conflicts"]) == (13, 4)
    assert stats["hottest_keys"] == [
        {"key": "hot", "conflicts": 3},
        {"key": "items/w2", "conflicts": 1},
    ]
    assert stats["expiring_holders"] == [
        {"holder": "bob", "expired": 3, "ended": 3, "expired_share": 1.0}
    ]
    # hold times (ms): 1000 x4, 2000 x3, 5000 x2, 3000 (completion), 1000 (the lapsed claim)
    holds = sorted([1000] * 4 + [2000] * 3 + [5000] * 2 + [3000, 1000])
    assert stats["hold_ms"] == {"count": 11, "p50": holds[5], "p99": holds[-1]}


def test_windows_leave_out_what_is_older(svc: Service, clock: tenure.FakeClock) -> None:
    lease = svc.acquire(ALICE, "old", ttl_ms=10_000)
    svc.release(ALICE, "old", lease.token)
    clock.advance(2 * HOUR)
    svc.acquire(BOB, "new", ttl_ms=1_000)
    clock.advance(1_001)
    svc.reap()
    stats = svc.stats()
    assert stats["endings"]["released"] == 1 and stats["endings"]["expired"] == 1
    assert stats["windows"]["1h"]["endings"]["released"] == 0
    assert stats["windows"]["1h"]["expired_share"] == 1.0
    assert stats["windows"]["24h"]["expired_share"] == 0.5
    clock.advance(30 * HOUR)
    quiet = svc.stats()["windows"]
    assert quiet["24h"]["ended"] == 0 and quiet["24h"]["expired_share"] is None
    assert svc.stats()["hold_ms"] == {"count": 0, "p50": None, "p99": None}


def test_timeline_puts_each_ending_in_its_bucket(svc: Service, clock: tenure.FakeClock) -> None:
    start = clock.now_ms()
    lease = svc.acquire(ALICE, "a", ttl_ms=1_000)
    svc.release(ALICE, "a", lease.token)
    svc.acquire(BOB, "b", ttl_ms=1_000)
    clock.advance(61_000)  # b lapsed in the first minute; recorded now, a minute later
    svc.reap()
    line = svc.timeline(span_ms=5 * 60_000, bucket_ms=60_000)
    assert line["bucket_ms"] == 60_000 and len(line["buckets"]) == 5
    assert line["end"] == clock.now_ms()
    buckets = line["buckets"]
    assert [b["start"] for b in buckets] == [line["start"] + i * 60_000 for i in range(5)]
    assert buckets[-1]["start"] <= clock.now_ms() < buckets[-1]["start"] + 60_000
    released = [b for b in buckets if b["released"]]
    expired = [b for b in buckets if b["expired"]]
    assert len(released) == 1 and released[0]["start"] <= start < released[0]["start"] + 60_000
    assert len(expired) == 1 and expired[0]["start"] > released[0]["start"]
    assert sum(b["released"] + b["expired"] for b in buckets) == 2


@pytest.mark.parametrize(
    ("span_ms", "bucket_ms", "field"),
    [(0, 60_000, "span_ms"), (HOUR, 999, "bucket_ms"), (HOUR, 8 * 86_400_000, "bucket_ms")],
)
def test_timeline_refuses_bad_buckets(
    svc: Service, span_ms: int, bucket_ms: int, field: str
) -> None:
    with pytest.raises(InvalidRequest) as err:
        svc.timeline(span_ms, bucket_ms)
    assert err.value.field == field


def test_a_timeline_of_too_many_buckets_is_widened(svc: Service) -> None:
    line = svc.timeline(span_ms=86_400_000, bucket_ms=1_000)
    assert line["bucket_ms"] == 60_000 and len(line["buckets"]) == 1440


def test_pruning_keeps_the_newest_and_the_all_time_totals(
    svc: Service, clock: tenure.FakeClock, make_service: Callable[..., Service]
) -> None:
    for i in range(3):  # high-volume events first: refusals, each its own key
        svc.acquire(ALICE, f"early/{i}", ttl_ms=600_000)
        with pytest.raises(tenure.LeaseHeld):
            svc.acquire(BOB, f"early/{i}")
    want = script(svc, clock)
    before = svc.stats()
    events = svc.events(limit=1000)
    assert [e.type for e in events[:5]] == ["acquired", "conflict"] * 2 + ["acquired"]
    assert svc.prune_events(max_count=10, max_age_ms=HOUR, batch=5) == 2  # bounded batch
    assert svc.events(limit=1000) == [events[0], events[2], *events[4:]]
    while svc.prune_events(max_count=10, max_age_ms=HOUR, batch=5):
        pass
    older = [e for e in events[:-10] if e.type in KEPT_BY_AGE]  # retention by count keeps them
    assert len(older) == len(events) - 10 - 3
    assert svc.events(limit=1000) == older + events[-10:]
    after = svc.stats()
    assert after["endings"] == before["endings"] == want["endings"]
    assert (after["acquisitions"], after["conflicts"]) == (16, 7)
    fresh = make_service().stats()  # another server: reads the folded totals
    assert fresh["endings"] == want["endings"] and fresh["acquisitions"] == 16
    assert svc.events(after=events[-1].id) == []  # the cursor goes on where it was
    svc.acquire(ALICE, "next")
    assert [e.type for e in svc.events(after=events[-1].id)] == ["acquired"]
    assert svc.stats()["acquisitions"] == 17 and make_service().stats()["acquisitions"] == 17


def test_pruning_by_age(svc: Service, clock: tenure.FakeClock) -> None:
    svc.acquire(ALICE, "a")
    clock.advance(2 * HOUR)
    svc.acquire(ALICE, "b")
    assert svc.prune_events(max_count=1_000, max_age_ms=HOUR, audit_age_ms=HOUR) == 1
    assert [e.key for e in svc.events()] == ["b"]
    assert svc.prune_events(max_count=1_000, max_age_ms=HOUR, audit_age_ms=HOUR) == 0
    assert svc.stats()["acquisitions"] == 2


def test_leases_page_by_key(svc: Service) -> None:
    for i in range(7):
        svc.acquire(ALICE, f"k/{i}")
    first = svc.list(prefix="k/", limit=3)
    second = svc.list(prefix="k/", limit=3, after=first[-1].key)
    third = svc.list(prefix="k/", limit=3, after=second[-1].key)
    assert [x.key for x in first + second + third] == [f"k/{i}" for i in range(7)]
    assert svc.list(prefix="k/", after="k/6") == []


def test_events_of_an_item(svc: Service) -> None:
    svc.items.create(ALICE, "work", id="w1")
    svc.items.claim(ALICE, "w1")
    svc.acquire(ALICE, "other")
    assert {e.key for e in svc.events(item="w1")} == {"items/w1"}
    assert [e.type for e in svc.events(item="w1")] == ["item_created", "acquired", "claimed"]
    assert svc.events(key="other", item="w1") == []  # both filters apply
    assert svc.events(key="items/w1", item="w1") == svc.events(item="w1")


def test_a_window_from_any_instant_holds_exactly_the_events_from_it(
    svc: Service, clock: tenure.FakeClock
) -> None:
    """Windows start at any instant: before every event, between two, on one shared by several,
    after all; with no events, and once the oldest were pruned (SQLite finds a window's first
    event by a binary search on the ids)."""
    store = svc.store

    def check() -> None:
        events = svc.events(limit=1000)
        instants = [e.at for e in events]
        for t in range(min(instants) - 1, max(instants) + 2):
            want = sum(1 for at in instants if at >= t)
            assert sum(store.count_events_since(t).values()) == want, t
            assert len(store.hold_times(t, 1000)) == 0  # no ending yet
            if isinstance(store, SqliteStore):  # the split itself, not only what it yields
                split = first_event_at(store.connector.conn(), t)
                assert all((e.id >= split) is (e.at >= t) for e in events), t

    assert store.count_events_since(0) == {}
    for i in range(11):  # acquisitions (kept by age) and extensions (by count)
        lease = svc.acquire(ALICE, f"w/{i}", ttl_ms=600_000)
        svc.extend(ALICE, f"w/{i}", lease.token, by_ms=1_200_000)
        if i % 3 == 2:
            clock.advance(7)
    check()
    assert svc.prune_events(max_count=4, max_age_ms=10 * HOUR, batch=100) > 0
    check()
