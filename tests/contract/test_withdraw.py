"""A grant whose waiting client had gone is ended through the service, with its reason."""

from __future__ import annotations

import pytest

import tenure
from tenure import NotHolder, Service


def test_withdraw_ends_the_grant_with_reason_waiter_gone(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("bo", "k", ttl_ms=600_000, session="s1")
    clock.advance(5)
    result = service.withdraw("bo", "k", lease.token)
    assert result.released is True
    assert service.get("k").state == "released"
    [event] = service.events(type="released")
    assert (event.holder, event.actor, event.token, event.reason) == ("bo", "bo", 1, "waiter_gone")
    assert event.data["session"] == "s1"
    assert service.acquire("cy", "k").token == 2  # the next waiter gets the key at once


def test_withdraw_ends_only_that_token(service: Service) -> None:
    old = service.acquire("bo", "k")
    service.release("bo", "k", old.token)
    assert service.withdraw("bo", "k", old.token).released is False  # ended already
    newer = service.acquire("bo", "k")
    assert service.withdraw("bo", "k", old.token).released is False  # a newer grant: kept
    assert service.get("k").token == newer.token
    assert service.get("k").state == "live"
    with pytest.raises(NotHolder):  # someone else's lease: never ended by bo's withdrawal
        service.withdraw("cy", "k", newer.token)
    assert service.get("k").state == "live"
