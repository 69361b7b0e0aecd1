"""Work that lapsed is findable (docs/claims.md, docs/mcp.md): the ready view lists, after the
open items, the claims whose holder let the lease run out, and a supervisor's briefing lists the
lapsed and stalled claims of those it supervises — on both backends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import Service
from tenure.service.queue import DEFAULT_STALL_MS

from ._items import ADMIN, AGENT, ALICE, BOB, CAROL, SUPERVISOR, lapse, org


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    return org(make_service)


def ids(views: object) -> list[str]:
    return [v.item.id for v in views]  # type: ignore[attr-defined]


def test_ready_lists_the_claims_that_lapsed_after_the_open_items(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for item_id, priority in (("open", 2), ("dead", 2), ("urgent-dead", 0), ("alive", 1)):
        svc.items.create(CAROL, item_id, id=item_id, priority=priority)
    for item_id in ("forced", "released", "moved", "done"):
        svc.items.create(CAROL, item_id, id=item_id)
    svc.items.claim(ALICE, "dead", ttl_ms=1_000)
    svc.items.claim(BOB, "urgent-dead", ttl_ms=1_000)
    svc.items.claim(BOB, "alive", ttl_ms=60_000)
    svc.items.claim(ALICE, "forced", ttl_ms=60_000)
    svc.items.force_release(ADMIN, "forced", reason="stuck")  # revoked: stopped on purpose
    epoch = svc.items.claim(ALICE, "released", ttl_ms=1_000).lease.token
    svc.items.release(ALICE, "released", epoch)  # back in the open queue
    svc.items.claim(ALICE, "moved", ttl_ms=1_000)
    svc.items.reassign(ADMIN, "moved", "bob", reason="bob knows it")  # waits for bob, not dead
    svc.items.complete(ALICE, "done", svc.items.claim(ALICE, "done").lease.token)
    lapse(clock, 1_000)

    view = svc.items.ready_view()
    assert [i.id for i in view.items] == ["open", "released"]
    assert ids(view.lapsed) == ["urgent-dead", "dead"]  # by priority, then age
    dead = view.lapsed[1]
    assert dead.lease_state == "lapsed" and dead.item.assignee == "alice"
    assert dead.lease is not None
    assert (dead.lease.holder, dead.lease.state) == ("alice", "expired")
    assert dead.lease.expires_at < svc.store.now_ms()  # since when it lapsed
    assert ids(svc.items.lapsed()) == ids(view.lapsed)
    assert ids(svc.items.lapsed(limit=1)) == ["urgent-dead"]
    assert [i.id for i in svc.items.ready()] == ["open", "released"]  # ready itself unchanged

    svc.reap()  # recording the expiry changes nothing
    assert ids(svc.items.lapsed()) == ["urgent-dead", "dead"]
    svc.items.claim(CAROL, "dead", takeover=True, reason="alice stopped")
    assert ids(svc.items.lapsed()) == ["urgent-dead"]  # taken over: live again
    with pytest.raises(tenure.InvalidRequest):
        svc.items.ready_view(limit=0)


def test_a_supervisors_briefing_lists_the_lapsed_and_stalled_claims_it_supervises(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for item_id in ("bobs", "carols", "admins", "sups"):
        svc.items.create(CAROL, item_id, id=item_id)
    svc.items.claim(BOB, "bobs", ttl_ms=1_000)
    svc.items.claim(CAROL, "carols", ttl_ms=60_000)
    svc.items.extend(CAROL, "carols", by_ms=60 * 60_000)
    svc.items.claim(ADMIN, "admins", ttl_ms=1_000)
    svc.items.claim(SUPERVISOR, "sups", ttl_ms=1_000)
    clock.advance(DEFAULT_STALL_MS + 1)  # bob's and the admin's lapse, carol's stalls

    brief = svc.items.briefing(SUPERVISOR)
    assert ids(brief.lapsed) == ["sups", "bobs"]  # its own, then those it supervises
    assert ids(brief.stalled) == ["carols"]
    assert ids(brief.carrying) == []
    admin = svc.items.briefing(ADMIN)  # an admin supervises everyone
    assert ids(admin.lapsed) == ["admins", "bobs", "sups"]
    assert ids(admin.stalled) == ["carols"]
    stranger = svc.items.briefing(BOB)  # no authority: only its own
    assert ids(stranger.lapsed) == ["bobs"] and ids(stranger.stalled) == []


def test_an_ancestors_briefing_lists_its_agents_lapsed_and_stalled_claims(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.create(CAROL, "dead", id="dead")
    svc.items.create(CAROL, "slow", id="slow")
    svc.items.claim(AGENT, "dead", ttl_ms=1_000)
    lapse(clock, 1_000)
    svc.items.claim(AGENT, "slow", ttl_ms=60_000)
    svc.items.extend(AGENT, "slow", by_ms=60 * 60_000)
    clock.advance(DEFAULT_STALL_MS + 1)
    brief = svc.items.briefing(ALICE)
    assert ids(brief.lapsed) == ["dead"] and ids(brief.stalled) == ["slow"]
    assert ids(svc.items.briefing(BOB).lapsed) == []
