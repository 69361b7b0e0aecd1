"""``Service.listeners`` hear each commit with the events it appended, whichever verb (a lease,
an item, the reaper) made it; :func:`freed_keys` names the keys those events may have freed
(the server wakes the long-polls on them)."""

from __future__ import annotations

from collections.abc import Sequence

import tenure
from tenure import Service
from tenure.core.items import item_key
from tenure.core.models import EventDraft, freed_keys


def listen(service: Service) -> list[list[EventDraft]]:
    heard: list[list[EventDraft]] = []

    def listener(events: Sequence[EventDraft]) -> None:
        heard.append(list(events))

    service.listeners.append(listener)
    return heard


def test_a_listener_gets_the_events_of_each_commit(service: Service) -> None:
    heard = listen(service)
    lease = service.acquire("alice", "k", ttl_ms=5_000)
    service.release("alice", "k", lease.token)
    assert [[e.type for e in events] for events in heard] == [["acquired"], ["released"]]
    assert freed_keys(heard[0]) == set()
    assert freed_keys(heard[1]) == {"k"}


def test_a_group_is_heard_once_with_all_its_events(service: Service) -> None:
    heard = listen(service)
    with service.group():
        service.acquire("alice", "a")
        service.acquire("alice", "b")
        service.release("alice", "a")
    assert [[(e.type, e.key) for e in events] for events in heard] == [
        [("acquired", "a"), ("acquired", "b"), ("released", "a")]
    ]


def test_item_verbs_free_the_claims_key(service: Service) -> None:
    item = service.items.create("jo", "Fix it")
    heard = listen(service)
    service.items.claim("jo", item.id)
    service.items.release("jo", item.id)
    assert freed_keys(heard[0]) == set()
    assert freed_keys(heard[1]) == {item_key(item.id)}
    claim = service.items.claim("jo", item.id)
    service.items.complete("jo", item.id, claim.lease.token)
    assert freed_keys(heard[-1]) == {item_key(item.id)}


def test_the_reapers_expiries_are_heard(service: Service, clock: tenure.FakeClock) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    heard = listen(service)
    clock.advance(2_000)
    service.reap()
    assert [[(e.type, e.key) for e in events] for events in heard] == [[("expired", "k")]]
    assert freed_keys(heard[0]) == {"k"}
