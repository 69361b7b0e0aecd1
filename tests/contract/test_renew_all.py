"""renew-all: every live lease of the caller (or the keys listed), each with its own ttl."""

from __future__ import annotations

import tenure
from tenure import LostLease, Service


def test_renew_all_renews_every_live_lease_of_the_caller(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "a", ttl_ms=10_000)
    service.acquire("alice", "b", ttl_ms=60_000)
    service.acquire("alice", "c", ttl_ms=5_000)
    bobs = service.acquire("bob", "d", ttl_ms=10_000)
    service.release("alice", "c")
    clock.advance(4_000)
    now = clock.now_ms()
    result = service.renew_all("alice")
    assert [(x.key, x.token, x.expires_at, x.renewals) for x in result.renewed] == [
        ("a", 1, now + 10_000, 1),
        ("b", 1, now + 60_000, 1),
    ]
    assert result.lost == ()
    assert service.get("d") == bobs


def test_renew_all_skips_lapsed_leases_and_reports_them_lost_when_no_keys_are_listed(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "a", ttl_ms=10_000)
    service.acquire("alice", "b", ttl_ms=1_000)
    clock.advance(1_000)
    result = service.renew_all("alice")
    assert [x.key for x in result.renewed] == ["a"]
    assert result.lost == (LostLease("b", "expired", 1),)


def test_renew_all_of_listed_keys_says_why_each_one_was_lost(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "live", ttl_ms=10_000)
    service.acquire("alice", "lapsed", ttl_ms=1_000)
    service.acquire("alice", "gone", ttl_ms=10_000)
    service.release("alice", "gone")
    service.acquire("bob", "bobs", ttl_ms=10_000)
    service.acquire("alice", "forced", ttl_ms=10_000)
    service.force_release(tenure.Principal("root", roles=("admin",)), "forced", reason="r")
    clock.advance(1_000)
    keys = ["live", "lapsed", "gone", "bobs", "never", "forced", "live"]
    result = service.renew_all("alice", keys)
    assert [(x.key, x.expires_at) for x in result.renewed] == [("live", clock.now_ms() + 10_000)]
    assert result.lost == (
        LostLease("lapsed", "expired", 1),
        LostLease("gone", "released", 1),
        LostLease("bobs", "not_held"),
        LostLease("never", "not_held"),
        LostLease("forced", "force_released", 1),
    )
    assert service.get("bobs").renewals == 0


def test_renew_all_with_nothing_held(service: Service) -> None:
    assert service.renew_all("alice") == tenure.RenewAllResult((), ())
    assert service.renew_all("alice", []) == tenure.RenewAllResult((), ())
