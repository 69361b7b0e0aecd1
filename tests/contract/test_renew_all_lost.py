"""renew-all without keys reports the session's leases that lapsed lately as ``lost``.

A lease of the caller's session that expired (recorded by the reaper or not yet) or was
force-released, whose deadline is at most the policy's longest ``max_ttl`` ago, is listed with
its reason and token; both paths (``renew_all`` and the database-written ``renew_all_json``)
say the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import tenure
from tenure import LostLease, Service

from ._items import ADMIN, AGENT, org

MINUTE = 60_000


def lost_both_ways(
    service: Service, who: str | tenure.Principal, session: str | None = None
) -> tuple[LostLease, ...]:
    """``lost`` of a renew-all without keys, checked equal on the database-written path."""
    objects = service.renew_all(who, session=session).lost
    body = json.loads(service.renew_all_json(who, session))
    assert body["lost"] == [x.to_dict() for x in objects]
    return objects


def test_lapsed_and_force_released_leases_of_the_session_are_reported_lost(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "live", ttl_ms=60_000, session="s")
    service.acquire("alice", "lapsed", ttl_ms=1_000, session="s")
    service.acquire("alice", "reaped", ttl_ms=1_000, session="s")
    service.acquire("alice", "forced", ttl_ms=60_000, session="s")
    service.acquire("alice", "released", ttl_ms=1_000, session="s")
    service.acquire("alice", "sibling", ttl_ms=1_000, session="other")
    service.acquire("alice", "default", ttl_ms=1_000)
    service.release("alice", "released", session="s")
    service.force_release(ADMIN, "forced", reason="stuck")
    clock.advance(1_500)
    assert lost_both_ways(service, "alice", "s") == (
        LostLease("forced", "force_released", 1),
        LostLease("lapsed", "expired", 1),
        LostLease("reaped", "expired", 1),
    )
    service.reap()  # recorded now: still reported
    assert lost_both_ways(service, "alice", "s") == (
        LostLease("forced", "force_released", 1),
        LostLease("lapsed", "expired", 1),
        LostLease("reaped", "expired", 1),
    )
    assert lost_both_ways(service, "alice") == (LostLease("default", "expired", 1),)
    assert lost_both_ways(service, "bob", "s") == ()
    assert service.get("live").state == "live"


def test_a_lapsed_lease_is_reported_within_max_ttl_of_its_deadline_and_not_once_regained(
    make_service: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    service = make_service(policy=tenure.PolicySet(tenure.Policy(max_ttl=10 * MINUTE)))
    service.acquire("alice", "a", ttl_ms=1_000, session="s")
    service.acquire("alice", "b", ttl_ms=1_000, session="s")
    clock.advance(1_001)
    service.reap()
    assert [x.key for x in lost_both_ways(service, "alice", "s")] == ["a", "b"]
    again = service.acquire("alice", "a", ttl_ms=10 * MINUTE, session="s")  # regained
    assert again.token == 2
    assert [x.key for x in lost_both_ways(service, "alice", "s")] == ["b"]
    clock.advance(10 * MINUTE - 2)  # b's deadline was 1 ms less than max_ttl ago
    assert [x.key for x in lost_both_ways(service, "alice", "s")] == ["b"]
    clock.advance(1)
    assert lost_both_ways(service, "alice", "s") == ()


def test_a_lapsed_or_force_released_claim_of_the_session_is_reported_lost(
    make_service: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    svc = org(make_service)
    for item in ("lapses", "forced", "works"):
        svc.items.create(ADMIN, item, id=item)
    svc.items.claim(AGENT, "lapses", ttl_ms=1_000, session="mcp")
    forced = svc.items.claim(AGENT, "forced", ttl_ms=60_000, session="mcp")
    svc.items.claim(AGENT, "works", ttl_ms=60_000, session="mcp")
    svc.items.force_release(ADMIN, "forced", "looping")
    clock.advance(1_001)
    svc.reap()
    assert lost_both_ways(svc, AGENT, "mcp") == (
        LostLease("items/forced", "force_released", forced.lease.token),
        LostLease("items/lapses", "expired", 1),
    )
    assert lost_both_ways(svc, AGENT, "another") == ()
