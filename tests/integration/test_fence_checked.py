"""Checked mode (``tenure.fence.CheckedFence``) asking a real tenure server about tokens."""

from __future__ import annotations

from typing import Any

import pytest

import tenure
from tenure.fence import CheckedFence, MemoryFence

KEY = "exports/daily"
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def clients(live_server: Any) -> tuple[tenure.Client, tenure.Client, tenure.Client, tenure.Client]:
    def client(name: str) -> tenure.Client:
        return tenure.Client(live_server.url, token=live_server.token_for(name))

    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    return client("reader"), client("worker-a"), client("worker-b"), admin


def test_tokens_tenure_never_issued_are_refused_and_jam_nothing(live_server: Any) -> None:
    reader, a, _, _ = clients(live_server)
    inner = MemoryFence()
    fence = CheckedFence(reader, inner)
    with pytest.raises(tenure.StaleToken, match="never issued: tenure has no lease"):
        fence.admit(KEY, 1)
    lease = a.acquire(KEY, ttl_ms=30_000)
    with pytest.raises(tenure.StaleToken, match="never issued") as huge:
        fence.admit(KEY, 2**62)
    assert huge.value.current_token == lease.token
    assert inner.current(KEY) is None  # the wrapped fence never saw it
    assert fence.admit(KEY, lease.token) == lease.token and inner.current(KEY) == lease.token


def test_a_revoked_token_is_refused_within_a_second(live_server: Any) -> None:
    """Force-released: the plain fence would admit the token (it is the largest it saw), and
    a cached answer lasts at most a second (it lasted a quarter of the ttl: 7.5 s here)."""
    reader, a, _, admin = clients(live_server)
    clock = Clock()
    inner = MemoryFence()
    fence = CheckedFence(reader, inner, clock=clock)
    lease = a.acquire(KEY, ttl_ms=30_000)
    fence.admit(KEY, lease.token)
    admin.force_release(KEY, reason="worker-a is stuck")
    inner.admit(KEY, lease.token)  # the plain fence still admits it
    clock.now += 0.9  # within the second: the cached answer stands
    assert fence.admit(KEY, lease.token) == lease.token
    clock.now += 0.2  # past it: tenure is asked again
    with pytest.raises(tenure.StaleToken, match="belongs to a lease that is force_released"):
        fence.admit(KEY, lease.token)


def test_a_cached_answer_never_outlives_the_leases_deadline(live_server: Any) -> None:
    reader, a, b, _ = clients(live_server)
    clock = Clock()
    fence = CheckedFence(reader, cache=1.0, skew=2.0, clock=clock)
    lease = a.acquire(KEY, ttl_ms=2_500)  # 2.5 s less 2 s of skew: cached for < 0.5 s
    fence.check(KEY, lease.token)
    a.release(KEY, lease.token)
    clock.now += 0.6
    with pytest.raises(tenure.StaleToken, match="is released"):
        fence.check(KEY, lease.token)
    short = b.acquire(KEY, ttl_ms=1_000)  # shorter than the skew: never cached
    fence.check(KEY, short.token)
    b.release(KEY, short.token)
    with pytest.raises(tenure.StaleToken, match="is released"):
        fence.check(KEY, short.token)  # same instant of the fence's clock: asked again


def test_a_renewed_lease_keeps_admitting(live_server: Any) -> None:
    reader, a, _, _ = clients(live_server)
    clock = Clock()
    inner = MemoryFence()
    fence = CheckedFence(reader, inner, clock=clock)
    lease = a.acquire(KEY, ttl_ms=30_000)
    for _ in range(3):
        assert fence.admit(KEY, lease.token) == lease.token
        a.renew(KEY, lease.token)
        clock.now += 5  # each time past the cache: tenure is asked and says live
    assert inner.current(KEY) == lease.token


def test_when_tenure_cannot_be_reached_the_check_refuses(live_server: Any) -> None:
    reader, a, _, _ = clients(live_server)
    clock = Clock()
    inner = MemoryFence()
    fence = CheckedFence(reader, inner, clock=clock)
    lease = a.acquire(KEY, ttl_ms=30_000)
    fence.admit(KEY, lease.token)
    live_server.stop()
    clock.now += 1.1  # the old cache (a quarter of the ttl) would still admit here
    with pytest.raises(tenure.Unavailable, match="fails closed") as caught:
        fence.admit(KEY, lease.token)
    assert caught.value.status == 503
    with pytest.raises(tenure.Unavailable):
        fence.check(KEY, lease.token + 1)  # never cached: refused the same way


def test_older_and_ended_tokens_are_refused(live_server: Any) -> None:
    reader, a, b, _ = clients(live_server)
    fence = CheckedFence(reader, cache=0)
    first = a.acquire(KEY, ttl_ms=30_000)
    a.release(KEY, first.token)
    with pytest.raises(tenure.StaleToken, match="is released"):
        fence.check(KEY, first.token)
    second = b.acquire(KEY, ttl_ms=30_000)
    with pytest.raises(
        tenure.StaleToken, match=f"is stale: tenure has since issued {second.token}"
    ):
        fence.check(KEY, first.token)
    assert fence.check(KEY, second.token) == second.token


def test_bad_arguments_are_refused(live_server: Any) -> None:
    reader = clients(live_server)[0]
    for cache in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(tenure.InvalidRequest, match="cache"):
            CheckedFence(reader, cache=cache)  # type: ignore[arg-type]
    for skew in (-1, True, 10_000):
        with pytest.raises(tenure.InvalidRequest, match="skew"):
            CheckedFence(reader, skew=skew)  # type: ignore[arg-type]
    with pytest.raises(tenure.InvalidRequest):
        CheckedFence(reader).check(KEY, 0)
    with pytest.raises(tenure.InvalidRequest, match="not an AsyncClient"):
        CheckedFence(tenure.AsyncClient(live_server.url))
