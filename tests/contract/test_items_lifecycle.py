"""The life of a claim after it is made (docs/claims.md): renew, extend, release, force-release,
fenced progress and completion, cancel — on both backends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import (
    AssignedToOther,
    Forbidden,
    InvalidRequest,
    LeaseLost,
    NotFound,
    NotHolder,
    Principal,
    Service,
    StaleToken,
)
from tenure.core.items import Transfer

from ._items import ADMIN, AGENT, ALICE, BOB, BOSS, CAROL, SUB, SUPERVISOR, lapse, org, snapshot

HOUR = 3_600_000


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    policy = tenure.PolicySet(tenure.Policy(max_lease=2 * HOUR))
    service = org(make_service, policy=policy)
    service.items.create(CAROL, "write the report", id="job")
    return service


# renew and extend --------------------------------------------------------------------------
def test_renew_keeps_the_epoch_and_is_refused_to_others(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job", ttl_ms=5_000).lease.token
    clock.advance(4_000)
    renewed = svc.items.renew(ALICE, "job", ttl_ms=8_000)
    assert (renewed.token, renewed.renewals, renewed.expires_at) == (
        epoch,
        1,
        clock.now_ms() + 8_000,
    )
    assert svc.items.renew(ALICE, "job", epoch=epoch).renewals == 2
    before = snapshot(svc, "job")
    with pytest.raises(NotHolder) as refused:
        svc.items.renew(BOB, "job")
    assert (refused.value.holder, refused.value.expires_at) == ("alice", renewed.expires_at)
    assert snapshot(svc, "job") == before
    lapse(clock, 8_000)
    with pytest.raises(LeaseLost) as lost:
        svc.items.renew(ALICE, "job")
    assert lost.value.reason == "expired"


def test_renewing_or_extending_a_never_claimed_item_is_not_found(svc: Service) -> None:
    for verb in (
        lambda: svc.items.renew(ALICE, "job"),
        lambda: svc.items.extend(ALICE, "job", by_ms=1),
    ):
        with pytest.raises(NotFound) as missing:
            verb()
        assert missing.value.what == "claim"
    # the fixture's item only (and its principals)
    assert [e.type for e in svc.events() if e.key] == ["item_created"]


def test_extend_is_capped_and_never_shortens(svc: Service, clock: tenure.FakeClock) -> None:
    epoch = svc.items.claim(ALICE, "job", ttl_ms=5_000).lease.token
    now = clock.now_ms()
    ext = svc.items.extend(ALICE, "job", by_ms=HOUR)
    assert (ext.extended, ext.capped, ext.granted_until) == (True, False, now + HOUR)
    assert ext.lease.token == epoch and ext.lease.expires_at == now + HOUR
    capped = svc.items.extend(ALICE, "job", until=now + 10 * HOUR)
    assert (capped.extended, capped.capped) == (True, True)
    assert (capped.requested_until, capped.granted_until) == (now + 10 * HOUR, now + 2 * HOUR)
    shorter = svc.items.extend(ALICE, "job", until=now + 1_000, epoch=epoch)
    assert (shorter.extended, shorter.capped, shorter.granted_until) == (
        False,
        False,
        now + 2 * HOUR,
    )
    assert svc.items.renew(ALICE, "job").expires_at == now + 2 * HOUR  # renew keeps the later
    assert svc.get("items/job").expires_at == now + 2 * HOUR
    with pytest.raises(NotHolder):
        svc.items.extend(BOB, "job", by_ms=HOUR)
    extended = [e.data for e in svc.events(type="extended")]
    assert [(d["granted_until"], d["capped"]) for d in extended] == [
        (now + HOUR, False),
        (now + 2 * HOUR, True),
    ]


# release ----------------------------------------------------------------------------------
def test_release_ends_the_lease_retires_the_edge_and_reopens_the_item(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    clock.advance(1_000)
    released = svc.items.release(ALICE, "job")
    assert released.released is True
    assert (released.item.status, released.item.assignee, released.item.epoch) == (
        "open",
        None,
        epoch,
    )
    view = svc.items.get("job")
    assert (view.item, view.lease_state) == (released.item, "none")
    assert svc.get("items/job").state == "released"
    assert view.transfers[-1] == Transfer(
        "job", "alice", None, epoch, "released", "alice", clock.now_ms()
    )
    assert [e.actor for e in svc.events(type="released")] == ["alice"]
    assert [i.id for i in svc.items.ready()] == ["job"]
    # idempotent: a second release says so and changes nothing
    before = snapshot(svc, "job")
    again = svc.items.release(ALICE, "job")
    assert (again.released, again.item) == (False, released.item)
    assert snapshot(svc, "job") == before


def test_releasing_someone_elses_live_claim_is_refused_naming_the_holder(svc: Service) -> None:
    lease = svc.items.claim(ALICE, "job", task="run-1").lease
    before = snapshot(svc, "job")
    with pytest.raises(NotHolder) as refused:
        svc.items.release(BOB, "job")
    assert (refused.value.holder, refused.value.task, refused.value.expires_at) == (
        "alice",
        "run-1",
        lease.expires_at,
    )
    assert snapshot(svc, "job") == before


def test_releasing_a_lapsed_claim_retires_the_edge_and_says_released_false(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease.token
    lapse(clock, 1_000)
    bobs = svc.items.release(BOB, "job")  # not bob's: nothing happens
    assert (bobs.released, bobs.item.assignee) == (False, "alice")
    result = svc.items.release(ALICE, "job")
    assert (result.released, result.item.assignee, result.item.status) == (False, None, "open")
    assert [(t.reason, t.from_) for t in svc.items.get("job").transfers] == [
        ("claimed", None),
        ("released", "alice"),
    ]
    assert [e.token for e in svc.events(type="expired")] == [epoch]  # the lease ended by expiry
    assert svc.events(type="released") == []


def test_releasing_a_never_claimed_item_says_released_false(svc: Service) -> None:
    before = snapshot(svc, "job")
    assert svc.items.release(ALICE, "job").released is False
    assert snapshot(svc, "job") == before


# force-release ----------------------------------------------------------------------------
def test_force_release_ends_the_claim_keeps_the_edge_and_kills_the_epoch(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job", task="run-1").lease.token
    clock.advance(1_000)
    forced = svc.items.force_release(ADMIN, "job", reason="stuck on a dead host")
    assert (forced.lease.state, forced.lease.holder, forced.lease.token) == (
        "force_released",
        "alice",
        epoch,
    )
    assert (forced.item.assignee, forced.item.epoch) == ("alice", epoch)  # the edge stays
    now = clock.now_ms()
    assert svc.items.get("job").transfers[-1] == Transfer(
        "job", "alice", "alice", epoch, "force_released", "root", now, "stuck on a dead host"
    )
    events = svc.events(type="force_released")
    assert [(e.actor, e.reason, e.holder, e.task, e.token) for e in events] == [
        ("root", "stuck on a dead host", "alice", "run-1", epoch)
    ]
    assert svc.items.queue("alice")[0].lease_state == "revoked"
    assert svc.items.get("job").item.revoked
    # the old epoch is dead from that moment on
    for fenced in (
        lambda: svc.items.progress(ALICE, "job", epoch, "still here"),
        lambda: svc.items.complete(ALICE, "job", epoch, result="late"),
    ):
        with pytest.raises(StaleToken) as stale:
            fenced()
        assert (stale.value.token, stale.value.current_token) == (epoch, epoch)
    with pytest.raises(LeaseLost) as lost:
        svc.items.renew(ALICE, "job")
    assert lost.value.reason == "force_released"
    with pytest.raises(NotFound):  # nothing live to force any more
        svc.items.force_release(ADMIN, "job", reason="again")
    # the claim stays revoked: even its assignee takes it back only with a takeover and a reason
    with pytest.raises(AssignedToOther) as refused:
        svc.items.claim(ALICE, "job")
    assert refused.value.lease_state == "revoked"
    with pytest.raises(InvalidRequest) as no_reason:
        svc.items.claim(ALICE, "job", takeover=True)
    assert no_reason.value.field == "reason"
    again = svc.items.claim(ALICE, "job", takeover=True, reason="the host is back")
    assert again.lease.token == epoch + 1 and not again.item.revoked


@pytest.mark.parametrize(
    ("holder", "actor"),
    [(ALICE, ADMIN), (ALICE, SUPERVISOR), (AGENT, ALICE), (SUB, ALICE), (BOSS, ADMIN)],
    ids=["admin", "supervisor", "parent", "grandparent", "admin-over-admin"],
)
def test_authorities_may_force_release(svc: Service, holder: Principal, actor: Principal) -> None:
    svc.items.claim(holder, "job")
    forced = svc.items.force_release(actor, "job", reason="r")
    assert forced.lease.state == "force_released"
    assert svc.items.get("job").transfers[-1].actor == actor.name


@pytest.mark.parametrize(
    ("holder", "actor"),
    [(ALICE, BOB), (ALICE, AGENT), (ALICE, ALICE), (BOSS, SUPERVISOR), (AGENT, CAROL)],
    ids=["unrelated", "child-over-parent", "the-holder", "supervisor-over-admin", "stranger"],
)
def test_anyone_else_may_not_force_release(
    svc: Service, holder: Principal, actor: Principal
) -> None:
    svc.items.claim(holder, "job")
    before = snapshot(svc, "job")
    with pytest.raises(Forbidden) as refused:
        svc.items.force_release(actor, "job", reason="r")
    assert refused.value.actor == actor.name
    assert snapshot(svc, "job") == before


@pytest.mark.parametrize("reason", ["", "  ", None, 7, "x" * 1025])
def test_force_release_needs_a_reason(svc: Service, reason: object) -> None:
    svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    with pytest.raises(InvalidRequest) as refused:
        svc.items.force_release(ADMIN, "job", reason=reason)  # type: ignore[arg-type]
    assert refused.value.field == "reason"
    assert snapshot(svc, "job") == before


def test_force_release_and_its_transfer_are_one_transaction(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    with svc.store.key_tx("items/job") as tx:
        tx_class = type(tx)

    def broken(self: object, transfers: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(tx_class, "add_transfers", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        svc.items.force_release(ADMIN, "job", reason="r")
    monkeypatch.undo()
    assert snapshot(svc, "job") == before  # the lease lives on: nothing was half done
    assert svc.get("items/job").state == "live"
