"""Invariant 9: extend is bounded; nothing shortens a lease."""

from __future__ import annotations

import pytest

import tenure
from tenure import InvalidRequest, LeaseLost, Service

HOUR = 3_600_000
DAY = 24 * HOUR


def test_extend_by_ms_counts_from_now(service: Service, clock: tenure.FakeClock) -> None:
    service.acquire("alice", "k", ttl_ms=5_000, task="run-1")
    clock.advance(2_000)
    now = clock.now_ms()
    result = service.extend("alice", "k", 1, by_ms=HOUR)
    assert (result.extended, result.capped) == (True, False)
    assert result.requested_until == result.granted_until == now + HOUR
    assert result.lease.expires_at == now + HOUR
    assert (result.lease.token, result.lease.state) == (1, "live")
    assert service.get("k").expires_at == now + HOUR
    events = service.events(type="extended")
    assert [(e.key, e.actor, e.holder, e.task, e.token, e.data) for e in events] == [
        (
            "k",
            "alice",
            "alice",
            "run-1",
            1,
            {"requested_until": now + HOUR, "granted_until": now + HOUR, "capped": False},
        )
    ]


def test_extend_until_an_absolute_instant(service: Service, clock: tenure.FakeClock) -> None:
    service.acquire("alice", "k", ttl_ms=5_000)
    until = clock.now_ms() + 2 * HOUR + 17
    result = service.extend("alice", "k", 1, until=until)
    assert (result.extended, result.capped, result.granted_until) == (True, False, until)
    assert service.get("k").expires_at == until
    clock.set(until - 1)
    assert service.get("k").state == "live"
    clock.set(until)
    assert service.get("k").state == "expired"


def test_extend_past_the_maximum_is_capped_and_says_so(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=5_000)
    now = clock.now_ms()
    result = service.extend("alice", "k", 1, by_ms=DAY + 1)
    assert (result.extended, result.capped) == (True, True)
    assert result.requested_until == now + DAY + 1
    assert result.granted_until == now + DAY
    assert result.lease.expires_at == now + DAY
    assert service.get("k").expires_at == now + DAY
    assert service.events(type="extended")[0].data == {
        "requested_until": now + DAY + 1,
        "granted_until": now + DAY,
        "capped": True,
    }


def test_extend_exactly_to_the_maximum_is_not_capped(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=5_000)
    result = service.extend("alice", "k", 1, until=clock.now_ms() + DAY)
    assert (result.extended, result.capped) == (True, False)


def test_extend_earlier_than_the_deadline_changes_nothing_and_says_so(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "k", ttl_ms=60_000)
    events = service.events()
    earlier = service.extend("alice", "k", 1, by_ms=10_000)
    assert (earlier.extended, earlier.capped) == (False, False)
    assert earlier.requested_until == clock.now_ms() + 10_000
    assert earlier.granted_until == lease.expires_at
    assert earlier.lease == lease
    same = service.extend("alice", "k", 1, until=lease.expires_at)
    assert (same.extended, same.granted_until) == (False, lease.expires_at)
    assert service.get("k") == lease
    assert service.events() == events


def test_a_capped_extend_never_shortens_an_earlier_longer_one(
    make_service, clock: tenure.FakeClock
) -> None:
    service = make_service(tenure.PolicySet().with_prefix("short/", max_lease=HOUR))
    service.acquire("alice", "short/k", ttl_ms=5_000)
    now = clock.now_ms()
    assert service.extend("alice", "short/k", 1, by_ms=HOUR).granted_until == now + HOUR
    again = service.extend("alice", "short/k", 1, by_ms=2 * HOUR)
    assert (again.extended, again.capped) == (False, True)
    assert (again.requested_until, again.granted_until) == (now + 2 * HOUR, now + HOUR)
    assert service.get("short/k").expires_at == now + HOUR


def test_a_renewal_after_an_extend_keeps_the_later_deadline(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=5_000)
    extended = service.extend("alice", "k", 1, by_ms=HOUR).lease.expires_at
    clock.advance(1_000)
    renewed = service.renew("alice", "k", 1)
    assert renewed.expires_at == extended
    assert renewed.renewals == 1
    again = service.acquire("alice", "k", ttl_ms=5_000)
    assert again.expires_at == extended
    assert service.renew_all("alice").renewed[0].expires_at == extended
    # Once the extended deadline is near, renewals push it again from now.
    clock.set(extended - 1_000)
    assert service.renew("alice", "k", 1).expires_at == extended - 1_000 + 5_000


@pytest.mark.parametrize(
    "args", [{}, {"until": 1_800_000_000_000, "by_ms": 1_000}], ids=["neither", "both"]
)
def test_extend_takes_exactly_one_of_until_and_by_ms(
    service: Service, args: dict[str, int]
) -> None:
    lease = service.acquire("alice", "k", ttl_ms=5_000)
    with pytest.raises(InvalidRequest) as caught:
        service.extend("alice", "k", 1, **args)
    assert caught.value.field in ("until", "by_ms")
    assert service.get("k") == lease


def test_extending_a_lapsed_lease_is_lost(service: Service, clock: tenure.FakeClock) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    clock.advance(1_000)
    with pytest.raises(LeaseLost) as caught:
        service.extend("alice", "k", 1, by_ms=HOUR)
    assert caught.value.reason == "expired"
    assert service.get("k").state == "expired"
