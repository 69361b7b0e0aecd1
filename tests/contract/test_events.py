"""Invariant 6 (every ending has one cause) and the event log every state change appends to."""

from __future__ import annotations

import threading

import pytest

import tenure
from tenure import LeaseHeld, Service
from tenure.core.models import EventQuery

ADMIN = tenure.Principal("root", roles=("admin",))


def test_every_state_change_appends_one_event_with_growing_ids(
    service: Service, clock: tenure.FakeClock
) -> None:
    t0 = clock.now_ms()
    service.acquire("alice", "k", ttl_ms=1_000, task="t")  # acquired
    clock.advance(100)
    service.extend("alice", "k", 1, by_ms=2_000)  # extended
    with pytest.raises(LeaseHeld):
        service.acquire("bob", "k")  # conflict
    service.write("alice", "k", 1, "v")  # written
    service.release("alice", "k")  # released
    clock.advance(100)
    service.acquire("bob", "k", ttl_ms=1_000)  # acquired
    service.force_release(ADMIN, "k", reason="r")  # force_released
    service.acquire("carol", "k", ttl_ms=1_000)  # acquired
    clock.advance(1_000)
    service.reap()  # expired
    events = service.events()
    assert [(e.type, e.holder, e.token, e.at - t0) for e in events] == [
        ("acquired", "alice", 1, 0),
        ("extended", "alice", 1, 100),
        ("conflict", "alice", 1, 100),
        ("written", "alice", 1, 100),
        ("released", "alice", 1, 100),
        ("acquired", "bob", 2, 200),
        ("force_released", "bob", 2, 200),
        ("acquired", "carol", 3, 200),
        ("expired", "carol", 3, 1_200),
    ]
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(e.key == "k" for e in events)
    assert events[0].actor == "alice" and events[0].data == {"ttl_ms": 1_000}


def test_things_that_change_nothing_append_nothing(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=60_000)
    before = service.events()
    service.get("k")
    service.list()
    service.contention("k")
    service.extend("alice", "k", 1, by_ms=1_000)  # earlier than the deadline
    service.release("bob", "never")
    service.reap()
    assert service.events() == before


@pytest.mark.parametrize("ending", ["released", "expired", "force_released"])
def test_each_lease_ends_exactly_one_way(
    service: Service, clock: tenure.FakeClock, ending: str
) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    if ending == "released":
        service.release("alice", "k")
    elif ending == "force_released":
        service.force_release(ADMIN, "k", reason="r")
    clock.advance(1_000)
    # Whatever happens afterwards, the ending is not recorded again or differently.
    service.reap()
    service.release("alice", "k", 1)
    service.acquire("bob", "k", ttl_ms=1_000)
    clock.advance(1_000)
    service.reap()
    endings = {"released", "expired", "force_released", "taken_over"}
    ends = [e.type for e in service.events(key="k") if e.type in endings and e.token == 1]
    assert ends == [ending]
    assert service.get("k").token == 2


def test_three_endings_are_distinct_event_types(service: Service, clock: tenure.FakeClock) -> None:
    service.acquire("alice", "a")
    service.acquire("alice", "b", ttl_ms=1_000)
    service.acquire("alice", "c")
    service.release("alice", "a")
    service.force_release(ADMIN, "c", reason="r")
    clock.advance(1_000)
    service.reap()
    by_key = {e.key: e.type for e in service.events() if e.type != "acquired"}
    assert by_key == {"a": "released", "b": "expired", "c": "force_released"}
    assert service.get("a").state == "released"
    assert service.get("b").state == "expired"
    assert service.get("c").state == "force_released"


def test_events_can_be_queried_by_cursor_key_holder_type_and_limit(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "a")
    service.acquire("bob", "b")
    service.release("alice", "a")
    service.acquire("bob", "a")
    service.release("bob", "b")
    everything = service.events()
    assert [(e.type, e.key, e.holder) for e in everything] == [
        ("acquired", "a", "alice"),
        ("acquired", "b", "bob"),
        ("released", "a", "alice"),
        ("acquired", "a", "bob"),
        ("released", "b", "bob"),
    ]
    ids = [e.id for e in everything]
    assert service.events(after=ids[1]) == everything[2:]
    assert service.events(after=ids[-1]) == []
    assert service.events(key="a") == [everything[0], everything[2], everything[3]]
    assert service.events(holder="bob") == [everything[1], everything[3], everything[4]]
    assert service.events(type="released") == [everything[2], everything[4]]
    assert service.events(key="a", holder="bob", type="acquired") == [everything[3]]
    assert service.events(limit=2) == everything[:2]
    assert service.events(after=ids[0], limit=2) == everything[1:3]
    assert service.events(key="nothing") == []
    # Paging with the cursor visits every event once.
    seen, cursor = [], 0
    while page := service.events(after=cursor, limit=2):
        seen.extend(page)
        cursor = page[-1].id
    assert seen == everything
    # A misspelt filter is refused, not ignored (it would read the whole log).
    with pytest.raises(TypeError, match="kye"):
        service.events(kye="a")  # type: ignore[call-arg]


def test_a_cursor_reader_sees_every_event_once_while_writers_commit(
    make_store, clock: tenure.FakeClock
) -> None:
    writers = [Service(make_store()) for _ in range(2)]
    reader = Service(make_store())
    per_writer, count = 40, 4
    done = threading.Event()
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for n in range(per_writer):
                writers[i % 2].acquire(f"w{i}", f"k{i}-{n}", ttl_ms=60_000)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    seen: list[tenure.Event] = []

    def read() -> None:
        cursor = 0
        try:
            while True:
                finished = done.is_set()
                page = reader.events(after=cursor, limit=7)
                seen.extend(page)
                if page:
                    cursor = page[-1].id
                elif finished:
                    return
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(count)]
    tail = threading.Thread(target=read)
    tail.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    done.set()
    tail.join(60)
    assert not errors
    everything = reader.events(limit=1000)
    assert len(everything) == per_writer * count
    assert [e.id for e in seen] == [e.id for e in everything]


def test_a_keys_events_page_by_page_are_the_log_filtered(service: Service) -> None:
    for n in range(12):  # three keys, two holders, interleaved
        key, who = f"k{n % 3}", ("alice", "bob")[n % 2]
        service.acquire(who, key, ttl_ms=60_000, task=f"t{n}")
        service.release(who, key)
    everything = service.events(limit=1_000)
    for key in ("k0", "k1", "k2", "absent"):
        for holder, kind, token in [(None, None, None), ("bob", None, None), (None, "released", 2)]:
            wanted = [
                e
                for e in everything
                if e.key == key
                and holder in (None, e.holder)
                and kind in (None, e.type)
                and token in (None, e.token)
            ]
            pages, after = [], 0
            while page := service.store.events(
                EventQuery(after, key, holder, kind, token, limit=2)
            ):
                pages.extend(page)
                after = page[-1].id
            assert pages == wanted
