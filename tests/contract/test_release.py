"""Invariant 7: release is idempotent; others' leases are defended. And `lease_lost` reasons."""

from __future__ import annotations

import pytest

import tenure
from tenure import LeaseLost, NotFound, NotHolder, Service

ADMIN = tenure.Principal("root", roles=("admin",))


def test_releasing_your_lease_ends_it_and_records_it(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "k", ttl_ms=5_000, task="run-1")
    clock.advance(1_000)
    result = service.release("alice", "k", lease.token)
    assert result.released is True
    assert result.lease is not None
    assert (result.lease.state, result.lease.token, result.lease.holder) == ("released", 1, "alice")
    assert service.get("k").state == "released"
    assert service.list() == []
    released = service.events(type="released")
    assert [(e.key, e.holder, e.actor, e.task, e.token, e.at) for e in released] == [
        ("k", "alice", "alice", "run-1", 1, clock.now_ms())
    ]


def test_release_without_a_token_releases_the_callers_live_lease(service: Service) -> None:
    service.acquire("alice", "k")
    assert service.release("alice", "k").released is True


def test_release_is_idempotent(service: Service) -> None:
    service.acquire("alice", "k")
    assert service.release("alice", "k").released is True
    events = service.events()
    again = service.release("alice", "k")
    assert again.released is False
    assert again.lease is not None and again.lease.state == "released"
    assert service.release("alice", "k", 1).released is False
    assert service.events() == events


def test_releasing_a_key_never_leased_says_so(service: Service) -> None:
    result = service.release("alice", "never")
    assert (result.released, result.lease) == (False, None)
    assert service.events() == []


def test_releasing_with_an_old_token_does_not_end_the_current_lease(service: Service) -> None:
    service.acquire("alice", "k")
    service.release("alice", "k")
    service.acquire("alice", "k")  # token 2
    result = service.release("alice", "k", 1)
    assert result.released is False
    assert service.get("k").state == "live"
    assert service.events(type="released", key="k")[-1].token == 1


def test_releasing_a_lapsed_lease_of_someone_else_succeeds_with_false(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    clock.advance(1_000)
    assert service.release("bob", "k").released is False
    assert service.get("k").state == "expired"


@pytest.mark.parametrize("verb", ["release", "renew", "extend"])
def test_touching_someone_elses_live_lease_is_refused_naming_the_holder(
    service: Service, clock: tenure.FakeClock, verb: str
) -> None:
    lease = service.acquire("alice", "k", ttl_ms=5_000, task="run-1")
    events = service.events()
    with pytest.raises(NotHolder) as caught:
        if verb == "release":
            service.release("bob", "k", lease.token)
        elif verb == "renew":
            service.renew("bob", "k", lease.token)
        else:
            service.extend("bob", "k", lease.token, by_ms=60_000)
    err = caught.value
    assert (err.key, err.holder, err.task, err.expires_at) == (
        "k",
        "alice",
        "run-1",
        lease.expires_at,
    )
    assert (err.code, err.status) == ("not_holder", 403)
    assert service.get("k") == lease
    assert service.events() == events


def test_release_by_someone_else_without_a_token_is_refused_too(service: Service) -> None:
    service.acquire("alice", "k")
    with pytest.raises(NotHolder):
        service.release("bob", "k")
    assert service.get("k").state == "live"


def test_renew_pushes_the_deadline_and_keeps_the_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    t0 = clock.now_ms()
    service.acquire("alice", "k", ttl_ms=5_000)
    clock.advance(3_000)
    renewed = service.renew("alice", "k", 1)
    assert (renewed.token, renewed.renewals, renewed.renewed_at) == (1, 1, t0 + 3_000)
    assert renewed.expires_at == t0 + 8_000
    assert renewed.acquired_at == t0
    clock.advance(1_000)
    longer = service.renew("alice", "k", 1, ttl_ms=20_000)
    assert (longer.ttl_ms, longer.expires_at, longer.renewals) == (20_000, t0 + 24_000, 2)
    # The next renewal without a ttl keeps the last one.
    clock.advance(1_000)
    assert service.renew("alice", "k", 1).expires_at == t0 + 25_000


def test_renew_with_the_wrong_token_of_a_live_lease_is_stale(service: Service) -> None:
    service.acquire("alice", "k")
    with pytest.raises(tenure.StaleToken) as caught:
        service.renew("alice", "k", 5)
    assert caught.value.current_token == 1


def test_renewing_a_key_never_leased_is_not_found(service: Service) -> None:
    with pytest.raises(NotFound):
        service.renew("alice", "never", 1)


def test_renew_after_expiry_is_lost_with_reason_expired(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    clock.advance(1_000)
    with pytest.raises(LeaseLost) as caught:
        service.renew("alice", "k", 1)
    assert (caught.value.reason, caught.value.token, caught.value.key) == ("expired", 1, "k")
    assert (caught.value.code, caught.value.status) == ("lease_lost", 409)


def test_renew_after_release_is_lost_with_reason_released(service: Service) -> None:
    service.acquire("alice", "k")
    service.release("alice", "k")
    with pytest.raises(LeaseLost) as caught:
        service.renew("alice", "k", 1)
    assert caught.value.reason == "released"


def test_renew_after_force_release_is_lost_with_reason_force_released(service: Service) -> None:
    service.acquire("alice", "k")
    service.force_release(ADMIN, "k", reason="stuck")
    with pytest.raises(LeaseLost) as caught:
        service.renew("alice", "k", 1)
    assert caught.value.reason == "force_released"


@pytest.mark.parametrize("ending", ["released", "expired", "force_released"])
def test_an_old_leases_reason_is_kept_after_the_key_moved_on(
    service: Service, clock: tenure.FakeClock, ending: str
) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    if ending == "released":
        service.release("alice", "k")
    elif ending == "expired":
        clock.advance(1_000)
    else:
        service.force_release(ADMIN, "k", reason="stuck")
    service.acquire("bob", "k", ttl_ms=1_000)
    service.release("bob", "k")  # the key's latest lease ended differently
    with pytest.raises(LeaseLost) as caught:
        service.renew("alice", "k", 1)
    assert (caught.value.reason, caught.value.token) == (ending, 1)


def test_renewing_an_older_token_while_holding_a_newer_one_is_lost_with_its_reason(
    service: Service,
) -> None:
    service.acquire("alice", "k")
    service.release("alice", "k")
    service.acquire("alice", "k")  # token 2, live
    with pytest.raises(LeaseLost) as caught:
        service.renew("alice", "k", 1)
    assert (caught.value.reason, caught.value.token) == ("released", 1)
    assert service.get("k").renewals == 0
