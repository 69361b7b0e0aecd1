"""The leases that ended are listed by how they ended (the dashboard's Leases filter): expired
(recorded or not), released (by a release, a force-release or a takeover), or all of them."""

from __future__ import annotations

import pytest

import tenure
from tenure import InvalidRequest, Service

ADMIN = tenure.Principal("root", roles=("admin",))


def _keys(service: Service, state: str, **kw: object) -> dict[str, str]:
    return {lease.key: lease.state for lease in service.list(state=state, **kw)}  # type: ignore[arg-type]


def test_each_ending_is_listed_under_its_filter(service: Service, clock: tenure.FakeClock) -> None:
    service.acquire("alice", "a/expired", ttl_ms=1_000)
    service.acquire("alice", "a/released", ttl_ms=60_000)
    service.release("alice", "a/released")
    service.acquire("bob", "a/forced", ttl_ms=60_000)
    service.force_release(ADMIN, "a/forced", "bob crashed")
    service.acquire("bob", "a/live", ttl_ms=60_000)
    clock.advance(2_000)  # a/expired lapses; no reaper has recorded it yet

    assert _keys(service, "live") == {"a/live": "live"}
    assert _keys(service, "expired") == {"a/expired": "expired"}
    assert _keys(service, "released") == {"a/released": "released", "a/forced": "force_released"}
    assert _keys(service, "all") == {
        "a/expired": "expired",
        "a/released": "released",
        "a/forced": "force_released",
        "a/live": "live",
    }
    assert _keys(service, "released", holder="bob") == {"a/forced": "force_released"}
    assert _keys(service, "all", prefix="a/f") == {"a/forced": "force_released"}
    assert list(_keys(service, "all", limit=2, after="a/expired")) == ["a/forced", "a/live"]


def test_a_key_acquired_again_leaves_the_ended_list(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k", ttl_ms=1_000)
    clock.advance(2_000)
    assert _keys(service, "expired") == {"k": "expired"}
    service.acquire("bob", "k", ttl_ms=60_000)
    assert _keys(service, "expired") == {}
    assert _keys(service, "live") == {"k": "live"}


def test_an_unknown_state_is_refused_naming_the_field(service: Service) -> None:
    with pytest.raises(InvalidRequest) as err:
        service.list(state="stuck")
    assert err.value.field == "state"
