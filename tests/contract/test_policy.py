"""SPEC section 3: policy defaults and per-key-prefix overrides."""

from __future__ import annotations

import pytest

import tenure
from tenure import InvalidRequest, PolicySet, Service, TooLarge

SECOND, MINUTE, HOUR = 1_000, 60_000, 3_600_000


def test_the_default_policy_is_the_specs(service: Service, clock: tenure.FakeClock) -> None:
    now = clock.now_ms()
    assert service.acquire("alice", "a").ttl_ms == 30 * SECOND
    assert service.acquire("alice", "b", ttl_ms=1 * SECOND).ttl_ms == SECOND
    assert service.acquire("alice", "c", ttl_ms=10 * MINUTE).ttl_ms == 10 * MINUTE
    for ttl in (SECOND - 1, 10 * MINUTE + 1):
        with pytest.raises(InvalidRequest) as caught:
            service.acquire("alice", "d", ttl_ms=ttl)
        assert caught.value.field == "ttl_ms"
    capped = service.extend("alice", "a", 1, by_ms=48 * HOUR)
    assert (capped.capped, capped.granted_until) == (True, now + 24 * HOUR)
    service.acquire("alice", "k" * 512)
    with pytest.raises(TooLarge) as key:
        service.acquire("alice", "k" * 513)
    assert (key.value.field, key.value.limit, key.value.size) == ("key", 512, 513)
    with pytest.raises(TooLarge) as meta:
        service.acquire("alice", "m", meta={"x": "y" * 4096})
    assert (meta.value.field, meta.value.limit) == ("meta", 4096)
    with pytest.raises(TooLarge) as value:
        service.write("alice", "a", 1, "v" * (1024 * 1024))
    assert (value.value.field, value.value.limit) == ("value", 1024 * 1024)


def test_meta_and_value_limits_count_compact_json_bytes(service: Service) -> None:
    # {"x":"…"} is 8 bytes around the string
    service.acquire("alice", "m", meta={"x": "y" * (4096 - 8)})
    with pytest.raises(TooLarge) as caught:
        service.acquire("alice", "m2", meta={"x": "é" * 2045})
    assert caught.value.size == 8 + 2045 * 2
    lease = service.acquire("alice", "v")
    service.write("alice", "v", lease.token, "v" * (1024 * 1024 - 2))


@pytest.fixture
def tuned(make_service) -> Service:
    policy = (
        PolicySet()
        .with_prefix("fast/", min_ttl=100, default_ttl=500, max_ttl=2_000, max_lease=10_000)
        .with_prefix("fast/slow/", min_ttl=5_000, default_ttl=5_000, max_ttl=20_000)
        .with_prefix("tiny/", max_key_bytes=10, max_meta_bytes=20, max_value_bytes=10)
    )
    return make_service(policy)


def test_ttl_bounds_follow_the_key_prefix(tuned: Service) -> None:
    assert tuned.acquire("alice", "fast/a").ttl_ms == 500
    assert tuned.acquire("alice", "fast/b", ttl_ms=100).ttl_ms == 100
    assert tuned.acquire("alice", "fast/c", ttl_ms=2_000).ttl_ms == 2_000
    for ttl in (99, 2_001):
        with pytest.raises(InvalidRequest) as caught:
            tuned.acquire("alice", "fast/d", ttl_ms=ttl)
        assert caught.value.field == "ttl_ms"
    # Elsewhere the default policy applies.
    assert tuned.acquire("alice", "other/a").ttl_ms == 30_000
    assert tuned.acquire("alice", "other/b", ttl_ms=10 * MINUTE).ttl_ms == 10 * MINUTE
    with pytest.raises(InvalidRequest):
        tuned.acquire("alice", "other/c", ttl_ms=999)
    # Renewals are held to the same bounds.
    with pytest.raises(InvalidRequest):
        tuned.renew("alice", "fast/a", 1, ttl_ms=2_001)
    assert tuned.renew("alice", "fast/a", 1, ttl_ms=2_000).ttl_ms == 2_000


def test_the_longest_matching_prefix_wins(tuned: Service) -> None:
    assert tuned.acquire("alice", "fast/slow/a").ttl_ms == 5_000
    with pytest.raises(InvalidRequest):
        tuned.acquire("alice", "fast/slow/b", ttl_ms=2_000)
    # An override starts from the default policy, not from the shorter prefix's.
    assert tuned.acquire("alice", "fast/slow/c", ttl_ms=20_000).ttl_ms == 20_000


def test_max_lease_follows_the_key_prefix(tuned: Service, clock: tenure.FakeClock) -> None:
    tuned.acquire("alice", "fast/a")
    result = tuned.extend("alice", "fast/a", 1, by_ms=HOUR)
    assert (result.capped, result.granted_until) == (True, clock.now_ms() + 10_000)


def test_key_meta_and_value_sizes_follow_the_key_prefix(tuned: Service) -> None:
    tuned.acquire("alice", "tiny/12345")  # 10 bytes
    tuned.acquire("alice", "tiny/éé")  # 9 bytes
    for key in ("tiny/123456", "tiny/ééé"):
        with pytest.raises(TooLarge) as caught:
            tuned.acquire("alice", key)
        assert (caught.value.field, caught.value.limit) == ("key", 10)
        assert caught.value.size == len(key.encode())
    with pytest.raises(TooLarge) as meta:
        tuned.acquire("alice", "tiny/m", meta={"k": "x" * 20})
    assert (meta.value.field, meta.value.limit) == ("meta", 20)
    with pytest.raises(TooLarge) as value:
        tuned.write("alice", "tiny/12345", 1, "x" * 20)
    assert (value.value.field, value.value.limit) == ("value", 10)
    assert tuned.write("alice", "tiny/12345", 1, "x" * 8).version == 1
    # Other keys keep the defaults.
    tuned.acquire("alice", "big/" + "k" * 500, meta={"k": "x" * 1000})
