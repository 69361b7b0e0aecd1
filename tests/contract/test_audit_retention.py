"""The audit trail cannot be flushed, on every backend: refusals are recorded in windows per
requester and key (whatever session each one names), and the security and ownership record
(principals, tokens, force-releases, dispatches, …) is kept by age only: a flood of
high-volume events under many session names, with a tiny count cap, removes none of it; past
the audit window it goes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from contract._items import ADMIN, ALICE, BOB, CAROL, org
from tenure import Service
from tenure.core.compaction import Retention
from tenure.core.retention import EVENT_RETENTION, KEPT_BY_AGE, KEPT_BY_COUNT
from tenure.service.principals import Principals
from tenure.store.retention import CONFLICT_WINDOW_MS

HOUR = 3_600_000
DAY = 24 * HOUR
TTL = 600_000  # the longest ttl
HAMMER = 150  # refusals of one requester on one key
SESSIONS = 80  # session names one requester makes up
HOT = 10  # keys of the flood
#: the record the flood must not remove
RECORD = ("principal_created", "token_issued", "force_released", "dispatched")


@pytest.fixture
def svc(make_service: Callable[..., Service], clock: tenure.FakeClock) -> Service:
    service = org(make_service)
    clock.advance(1)  # (the org's own record is kept by age only: past an age of 0)
    while service.prune_events(max_count=0, max_age_ms=0, audit_age_ms=0):
        pass
    assert service.events() == []
    return service


def refuse(svc: Service, who: tenure.Principal, key: str, times: int, **kw: str) -> None:
    for _ in range(times):
        with pytest.raises(tenure.LeaseHeld):
            svc.acquire(who, key, **kw)


def conflicts(svc: Service) -> list[tenure.Event]:
    return svc.events(type="conflict", limit=1000)


def test_refusals_of_one_requester_are_one_event_that_counts_them(svc: Service) -> None:
    svc.acquire(ALICE, "hot", ttl_ms=TTL)
    refuse(svc, BOB, "hot", HAMMER)
    [event] = conflicts(svc)
    assert (event.key, event.holder, event.actor) == ("hot", "alice", "bob")
    assert event.data["repeats"] == HAMMER
    stats = svc.stats()
    assert stats["conflicts"] == HAMMER  # all time
    assert stats["windows"]["1h"]["conflicts"] == HAMMER
    assert stats["hottest_keys"] == [{"key": "hot", "conflicts": HAMMER}]


def test_refusals_coalesce_per_principal_and_key_whatever_the_session(svc: Service) -> None:
    svc.acquire(ALICE, "hot", ttl_ms=TTL)
    for i in range(SESSIONS):  # a session is a free string: one requester makes up many
        refuse(svc, BOB, "hot", 1, session=f"s{i}")
    [event] = conflicts(svc)
    assert (event.key, event.holder, event.actor) == ("hot", "alice", "bob")
    assert (event.data["repeats"], event.data["wanted_session"]) == (SESSIONS, "s0")
    assert svc.stats()["conflicts"] == SESSIONS
    assert svc.contention("hot") == SESSIONS


def test_a_window_per_requester_key_and_lease(svc: Service, clock: tenure.FakeClock) -> None:
    lease = svc.acquire(ALICE, "k", ttl_ms=10 * CONFLICT_WINDOW_MS)
    refuse(svc, BOB, "k", 2)
    refuse(svc, BOB, "k", 2, session="other")  # another session of bob: the same window
    refuse(svc, CAROL, "k", 1)  # another requester
    refuse(svc, BOB, "k", 1)  # interleaved: still bob's first window
    clock.advance(CONFLICT_WINDOW_MS)  # the window closed: a new event
    refuse(svc, BOB, "k", 1)
    svc.release(ALICE, "k", lease.token)
    svc.acquire(CAROL, "k", ttl_ms=TTL)  # another lease: a new event, same window
    refuse(svc, BOB, "k", 2)
    got = [(e.actor, e.holder, e.data.get("wanted_session"), e.data.get("repeats", 1))
           for e in conflicts(svc)]  # fmt: skip
    assert got == [
        ("bob", "alice", None, 5),
        ("carol", "alice", None, 1),
        ("bob", "alice", None, 1),
        ("bob", "carol", None, 2),
    ]
    assert svc.stats()["conflicts"] == 9


def hold(svc: Service) -> dict[str, int]:
    """Alice holds the keys of the flood: their tokens."""
    return {f"hot/{i}": svc.acquire(ALICE, f"hot/{i}", ttl_ms=TTL).token for i in range(HOT)}


def write_record(svc: Service) -> list[tenure.Event]:
    """A principal and its token made by an admin, a force-release, a dispatch: the record."""
    first = svc.store.last_event_id()
    Principals(svc.store).create(ADMIN, "ci", kind="service")
    svc.acquire(CAROL, "stuck", ttl_ms=TTL)
    svc.force_release(ADMIN, "stuck", "it hung")
    svc.items.create(ALICE, "work", id="job")
    svc.items.dispatch(ALICE, "job", agent="r1")
    written = svc.events(after=first, limit=1000)
    assert {e.type for e in written} >= set(RECORD)
    return written


def flood(svc: Service, held: dict[str, int], clock: tenure.FakeClock) -> None:
    """High-volume events: refusals under :data:`SESSIONS` session names across the held keys,
    and as many extensions of them (renewals)."""
    for i in range(SESSIONS):
        key = f"hot/{i % HOT}"
        refuse(svc, BOB, key, 1, session=f"s{i}")
        svc.extend(ALICE, key, held[key], by_ms=TTL + 1 + i)
        clock.advance(1)


def high_volume(events: list[tenure.Event]) -> list[tenure.Event]:
    return [e for e in events if e.type in KEPT_BY_COUNT]


def ids(events: list[tenure.Event]) -> set[int]:
    return {e.id for e in events}


def test_a_flood_with_a_tiny_count_cap_keeps_the_record(
    svc: Service, clock: tenure.FakeClock
) -> None:
    held = hold(svc)
    record = write_record(svc)
    flood(svc, held, clock)
    before = svc.events(limit=1000)
    assert len(high_volume(before)) == HOT + SESSIONS  # a refusal window per key, not session
    while svc.prune_events(max_count=5, max_age_ms=HOUR, batch=7):
        pass
    kept = svc.events(limit=1000)
    assert [e for e in kept if e.id <= record[-1].id] == [
        e for e in before if e.id <= record[-1].id and e.type in KEPT_BY_AGE
    ]
    assert ids(record) <= ids(kept)  # principal_created, token_issued, force_released, …
    assert 0 < len(high_volume(kept)) <= 5  # the flood itself is kept by count
    assert {e.type for e in kept} <= set(EVENT_RETENTION)  # every kind is classified
    assert svc.stats()["conflicts"] == SESSIONS


def test_the_record_goes_after_the_audit_window(svc: Service, clock: tenure.FakeClock) -> None:
    old = write_record(svc)
    clock.advance(DAY + 1)  # the old record is past a day, not past two
    svc.items.cancel(ALICE, "job", "moved on")
    held = hold(svc)
    young = svc.events(after=old[-1].id, limit=1000)
    flood(svc, held, clock)
    while svc.prune_events(max_count=5, max_age_ms=HOUR, batch=7, audit_age_ms=2 * DAY):
        pass
    assert ids(old + young) <= ids(svc.events(limit=1000))
    # never shorter than the other events' age: a day of audit under a 2-day age keeps it
    while svc.prune_events(max_count=5, max_age_ms=2 * DAY, batch=7, audit_age_ms=DAY):
        pass
    assert ids(old) <= ids(svc.events(limit=1000))
    while svc.prune_events(max_count=5, max_age_ms=HOUR, batch=7, audit_age_ms=DAY):
        pass
    kept = svc.events(limit=1000)
    assert not ids(old) & ids(kept) and ids(young) <= ids(kept)
    assert svc.stats()["endings"]["force_released"] == 1  # its count stays in the totals


def test_compaction_keeps_the_record_by_age_and_the_flood_by_count(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.retention = Retention(events_max=5, events_age_ms=HOUR, audit_age_ms=DAY)
    held = hold(svc)
    record = write_record(svc)
    flood(svc, held, clock)
    done = svc.compact(batch=7, max_batches=1000)
    assert done.complete and done.events > 0
    kept = svc.events(limit=1000)
    assert ids(record) <= ids(kept) and 0 < len(high_volume(kept)) <= 5
    clock.advance(DAY + 1)
    assert svc.compact(batch=7, max_batches=1000).complete
    assert not ids(record) & ids(svc.events(limit=1000))
