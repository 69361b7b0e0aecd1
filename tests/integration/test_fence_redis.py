"""``tenure.fence.RedisFence`` against a real ``redis-server``, with tokens from a real tenure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

import tenure
from redis_server import RedisServer
from tenure.fence import RedisFence

KEY = "cache/prices"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()


def test_admit_refuses_a_smaller_token_and_keeps_the_largest(redis_server: RedisServer) -> None:
    fence = RedisFence(redis_server.client())
    assert fence.current(KEY) is None
    assert fence.admit(KEY, 5) == 5
    assert fence.admit(KEY, 5) == 5  # the same holder writes again
    with pytest.raises(tenure.StaleToken) as refused:
        fence.admit(KEY, 4)
    assert (refused.value.token, refused.value.current_token) == (4, 5)
    assert fence.admit(KEY, 6) == 6 and fence.current(KEY) == 6


def test_compare_is_exact_over_the_whole_64_bit_range(redis_server: RedisServer) -> None:
    """Lua numbers are doubles: 2**62 + 1 and 2**62 would compare equal as numbers."""
    fence = RedisFence(redis_server.client())
    fence.admit(KEY, 2**62 + 1)
    with pytest.raises(tenure.StaleToken):
        fence.admit(KEY, 2**62)
    with pytest.raises(tenure.StaleToken):
        fence.admit(KEY, 99)  # fewer digits
    assert fence.admit(KEY, 2**63 - 1) == 2**63 - 1


def test_fenced_set_writes_the_value_only_with_a_current_token(redis_server: RedisServer) -> None:
    r = redis_server.client()
    fence = RedisFence(r)
    fence.set(KEY, 7, "prices", "v7")
    with pytest.raises(tenure.StaleToken):
        fence.set(KEY, 6, "prices", "v6 (stale)")
    assert r.get("prices") == b"v7"
    fence.set(KEY, 8, "prices", "v8")
    assert r.get("prices") == b"v8" and fence.current(KEY) == 8


def test_bad_arguments_change_nothing(redis_server: RedisServer) -> None:
    fence = RedisFence(redis_server.client())
    for key, token in (("", 1), (KEY, 0), (KEY, -1), (KEY, 2**63), (KEY, True)):
        with pytest.raises(tenure.InvalidRequest):
            fence.admit(key, token)
    assert redis_server.client().keys("*") == []


def test_admit_on_acquire_closes_the_window(live_server: Any, redis_server: RedisServer) -> None:
    """A stale holder's SET arriving before the new holder's first write is refused."""
    r = redis_server.client()
    fence = RedisFence(r)
    a = tenure.Client(live_server.url, token=live_server.token_for("worker-a"))
    b = tenure.Client(live_server.url, token=live_server.token_for("worker-b"))
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    old = a.acquire(KEY, ttl_ms=30_000, fences=[fence])
    fence.set(KEY, old.token, "prices", "by a")
    admin.force_release(KEY, reason="worker-a is paused")
    with b.lease(KEY, ttl=30, fences=[fence]) as lease:
        with pytest.raises(tenure.StaleToken):  # a wakes up first: refused all the same
            fence.set(KEY, old.token, "prices", "by a, late")
        assert r.get("prices") == b"by a" and fence.current(KEY) == lease.token
        fence.set(KEY, lease.token, "prices", "by b")
    assert r.get("prices") == b"by b"


def test_reset_forgets_a_key(redis_server: RedisServer) -> None:
    fence = RedisFence(redis_server.client())
    fence.admit(KEY, 40)
    assert fence.reset(KEY) and fence.current(KEY) is None
    assert fence.admit(KEY, 1) == 1


def test_write_runs_any_command_atomically_with_the_check(redis_server: RedisServer) -> None:
    """``admit()`` then ``INCRBY`` is check-then-act; ``write`` is one script."""
    r = redis_server.client()
    fence = RedisFence(r)
    assert fence.write(KEY, 7, "INCRBY", "hits", 5) == 5
    assert fence.write(KEY, 7, "HSET", "prices:h", "eur", "1.0") == 1
    assert fence.write(KEY, 8, "INCRBY", "hits", 1) == 6  # a newer holder
    with pytest.raises(tenure.StaleToken) as refused:
        fence.write(KEY, 7, "INCRBY", "hits", 100)  # the older holder, after the newer one
    assert refused.value.current_token == 8
    assert r.get("hits") == b"6"
    for bad in ("", "EVAL", "SET X", 5):
        with pytest.raises(tenure.InvalidRequest):
            fence.write(KEY, 9, bad, "hits", 1)  # type: ignore[arg-type]
    assert r.get("hits") == b"6" and fence.current(KEY) == 8


def test_an_evicting_redis_is_refused_at_setup(redis_server: RedisServer) -> None:
    r = redis_server.client()
    r.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(tenure.FenceMisuse, match="noeviction") as refused:
        RedisFence(r)
    assert refused.value.state == "evicting"
    r.config_set("maxmemory-policy", "volatile-lru")  # the fence's keys have no TTL
    assert RedisFence(r).admit(KEY, 3) == 3
    assert r.ttl("tenure:fence:" + KEY) == -1


def test_a_redis_that_hides_its_config_needs_an_explicit_risk(redis_server: RedisServer) -> None:
    admin = redis_server.client()
    admin.acl_setuser(
        "app", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-config"]
    )
    managed = redis.Redis(host="127.0.0.1", port=redis_server.port, username="app", password="pw")
    with pytest.raises(tenure.FenceMisuse, match="allow_eviction_risk=True") as refused:
        RedisFence(managed)
    assert refused.value.state == "eviction_unknown"
    assert RedisFence(managed, allow_eviction_risk=True).admit(KEY, 4) == 4


def test_a_redis_fence_bound_to_its_keys(redis_server: RedisServer) -> None:
    fence = RedisFence(redis_server.client(), keys="cache/{name}")
    assert fence.write(KEY, 3, "SET", "prices", "v3") is not None
    with pytest.raises(tenure.FenceMisuse):
        fence.admit("caches/prices", 4)
    assert redis_server.client().keys("tenure:fence:caches*") == []
