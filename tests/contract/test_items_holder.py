"""Only the holder writes: progress and completion with the item's current epoch are accepted
only from the principal that holds it (any of its sessions); an authority that must finish
someone's work force-releases it first, which advances the epoch."""

from __future__ import annotations

import pytest

import tenure
from tenure import NotHolder, Principal, Service, StaleToken

from ._items import ADMIN, AGENT, ALICE, BOB, SUPERVISOR, lapse, snapshot

NON_HOLDERS = [BOB, ADMIN, SUPERVISOR, ALICE]  # alice: the parent of the agent holding it


@pytest.mark.parametrize("who", NON_HOLDERS, ids=lambda p: p.name)
@pytest.mark.parametrize("lapsed", [False, True], ids=["live", "lapsed"])
def test_the_current_epoch_from_anyone_but_its_holder_is_not_holder(
    svc: Service, clock: tenure.FakeClock, who: Principal, lapsed: bool
) -> None:
    claim = svc.items.claim(AGENT, "job", ttl_ms=5_000, session="agent-1")
    if lapsed:
        lapse(clock, 5_000)
    epoch = claim.lease.token
    before = snapshot(svc, "job")
    for write in (
        lambda: svc.items.progress(who, "job", epoch, "taking over quietly"),
        lambda: svc.items.complete(who, "job", epoch, {"by": who.name}),
        lambda: svc.items.complete(who, "job", epoch, {"by": who.name}, op_id="op-1"),
    ):
        with pytest.raises(NotHolder) as caught:
            write()
        assert caught.value.info() == {
            "key": "items/job",
            "holder": AGENT.name,
            "session": "agent-1",
            "task": None,
            "expires_at": claim.lease.expires_at,
        }
    after = snapshot(svc, "job")
    assert after[1:] == before[1:]
    assert [e.type for e in after[0][len(before[0]) :]] in ([], ["expired"])
    # the holder itself still may, from any of its sessions
    done = svc.items.complete(AGENT, "job", epoch, {"ok": True})
    assert done.item.status == "done" and done.item.result == {"ok": True}


def test_an_older_epoch_is_stale_whoever_sends_it(svc: Service, clock: tenure.FakeClock) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000)
    lapse(clock, 1_000)
    svc.items.claim(BOB, "job", takeover=True, reason="alice is gone")
    for who in (ALICE, BOB, ADMIN):
        with pytest.raises(StaleToken):
            svc.items.complete(who, "job", old.lease.token, "late")
        with pytest.raises(StaleToken):
            svc.items.progress(who, "job", old.lease.token, "late")


def test_an_authority_finishes_someones_work_by_force_release_and_a_new_claim(
    svc: Service,
) -> None:
    claim = svc.items.claim(ALICE, "job")
    svc.items.force_release(ADMIN, "job", reason="alice is away")
    with pytest.raises(StaleToken):  # the old epoch is dead for everyone, alice included
        svc.items.complete(ALICE, "job", claim.lease.token, "mine")
    mine = svc.items.claim(ADMIN, "job", takeover=True, reason="finishing it")
    assert svc.items.complete(ADMIN, "job", mine.lease.token, "done").item.status == "done"


def test_a_completion_repeated_by_someone_else_is_not_a_duplicate(svc: Service) -> None:
    claim = svc.items.claim(ALICE, "job")
    first = svc.items.complete(ALICE, "job", claim.lease.token, {"pr": 1}, op_id="op-1")
    before = snapshot(svc, "job")
    with pytest.raises(NotHolder):
        svc.items.complete(BOB, "job", claim.lease.token, {"pr": 2}, op_id="op-1")
    assert snapshot(svc, "job") == before
    again = svc.items.complete(ALICE, "job", claim.lease.token, {"pr": 1}, op_id="op-1")
    assert again.duplicate and again.item == first.item


def test_a_sibling_session_of_the_holder_reports_progress_and_completes(svc: Service) -> None:
    claim = svc.items.claim(ALICE, "job", session="laptop")
    # the epoch proves the claim: another process of alice's (a dispatched script, a CLI)
    assert svc.items.progress(ALICE, "job", claim.lease.token, "half").progress["by"] == "alice"
    assert svc.items.complete(ALICE, "job", claim.lease.token).item.status == "done"
