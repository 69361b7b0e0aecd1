"""``Service.group()``: calls that share one transaction (the server's group commit).

Inside a group each call sees what the ones before it wrote, what a call that failed wrote is
undone alone, nothing is announced to listeners before the group's commit, and after the
group everything is durable for every other connection. On both backends a group is one
transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tenure
from tenure import LeaseHeld, Service
from tenure.core.models import EventDraft


def test_calls_in_a_group_see_each_other_and_are_durable_after_it(
    service: Service, make_store: Callable[..., Any]
) -> None:
    with service.group():
        first = service.acquire("alice", "k", ttl_ms=5_000)
        with pytest.raises(LeaseHeld) as held:
            service.acquire("bob", "k")
        assert (held.value.holder, held.value.token) == ("alice", first.token)
        renewed = service.renew("alice", "k", first.token)
        service.acquire("bob", "other")
    assert renewed.renewals == 1
    other = Service(make_store())  # another connection: sees the group's commit
    assert other.get("k").holder == "alice"
    assert other.get("other").holder == "bob"
    types = [(e.type, e.key) for e in other.events()]
    assert types == [("acquired", "k"), ("conflict", "k"), ("acquired", "other")]


def test_listeners_hear_of_a_group_once_it_committed(service: Service) -> None:
    heard: list[list[str]] = []
    service.listeners.append(lambda _events: heard.append([e.key or "" for e in service.events()]))
    with service.group():
        service.acquire("alice", "a")
        service.acquire("alice", "b")
        assert heard == []  # not durable yet: nobody is woken
    assert heard == [["a", "b"]]  # once, and the events are readable by then


def test_a_failing_call_is_undone_alone(service: Service) -> None:
    with service.group():
        service.acquire("alice", "a")
        with pytest.raises(tenure.TenureError):
            service.acquire("alice", "", ttl_ms=1_000)  # refused before any write
        with pytest.raises(RuntimeError), service.store.key_tx("b", create=True) as tx:
            tx.append([EventDraft("acquired", "b", holder="ghost")])
            raise RuntimeError("a bug half-way through a write")
        service.acquire("alice", "c")
    assert service.get("a").holder == "alice"
    assert service.get("c").holder == "alice"
    assert service.store.get("b") is None
    assert [e.key for e in service.events()] == ["a", "c"]


def test_an_error_out_of_the_group_undoes_what_was_not_committed(service: Service) -> None:
    """The group is one transaction, so none of it happened."""
    heard: list[int] = []
    service.listeners.append(lambda _events: heard.append(1))
    with pytest.raises(RuntimeError), service.group():
        service.acquire("alice", "a")
        raise RuntimeError("the group's owner failed before the commit")
    assert [e.key for e in service.events()] == []
    assert heard == []  # the announcement belongs to a commit the group never made
    service.acquire("bob", "z")  # the store is usable afterwards
    assert service.get("z").holder == "bob"


def test_groups_nest_as_one(service: Service) -> None:
    heard: list[int] = []
    service.listeners.append(lambda _events: heard.append(1))
    with service.group():
        with service.group():
            service.acquire("alice", "a")
        assert heard == []
        service.acquire("alice", "b")
    assert heard == [1]
