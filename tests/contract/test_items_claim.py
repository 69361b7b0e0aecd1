"""Claims on items (docs/claims.md): the edge and the lease, conflicts, takeover, implicit claims
by update, and dispatch — on both backends."""

from __future__ import annotations

import pytest

import tenure
from tenure import AssignedToOther, Conflict, LeaseHeld, LeaseLost, NotFound, Service
from tenure.core.items import Transfer
from tenure.core.models import ENDINGS
from tenure.service.principals import hash_token

from ._items import ADMIN, ALICE, BOB, lapse, refused_and_counted, snapshot


def test_a_claim_writes_the_edge_and_the_lease_and_returns_the_epoch(
    svc: Service, clock: tenure.FakeClock
) -> None:
    clock.advance(1_000)
    now = clock.now_ms()
    claim = svc.items.claim(BOB, "job", ttl_ms=5_000, task="run-1")
    lease = claim.lease
    assert (lease.key, lease.holder, lease.task, lease.token, lease.ttl_ms) == (
        "items/job",
        "bob",
        "run-1",
        1,
        5_000,
    )
    assert (lease.acquired_at, lease.expires_at, lease.state) == (now, now + 5_000, "live")
    item = claim.item
    assert (item.status, item.assignee, item.epoch, item.updated_at) == (
        "in_progress",
        "bob",
        lease.token,
        now,
    )
    assert svc.items.get("job").item == item
    assert svc.get("items/job") == lease
    view = svc.items.get("job")
    assert (view.lease, view.lease_state) == (lease, "live")
    assert view.transfers == (Transfer("job", None, "bob", 1, "claimed", "bob", now, None),)
    claimed = svc.events(type="claimed")
    assert [(e.key, e.actor, e.token, e.data) for e in claimed] == [
        ("items/job", "bob", 1, {"item": "job", "previous": None, "transfer": "claimed"})
    ]
    assert [(e.holder, e.token) for e in svc.events(type="acquired")] == [("bob", 1)]
    assert [i.id for i in svc.items.list(assignee="bob")] == ["job"]


def test_reclaiming_your_own_live_claim_renews_it_and_keeps_the_epoch(
    svc: Service, clock: tenure.FakeClock
) -> None:
    first = svc.items.claim(ALICE, "job", ttl_ms=5_000, task="run-1").lease
    events = svc.events()
    clock.advance(2_000)
    again = svc.items.claim(ALICE, "job", ttl_ms=6_000, task="run-2")
    assert again.lease.token == first.token == again.item.epoch
    assert (again.lease.renewals, again.lease.task) == (1, "run-2")
    assert again.lease.expires_at == clock.now_ms() + 6_000
    assert again.lease.acquired_at == first.acquired_at
    assert [t.reason for t in svc.items.get("job").transfers] == ["claimed"]
    assert svc.events() == events  # a renewal is not a new claim
    # even with takeover: there is nothing to take over from yourself
    assert svc.items.claim(ALICE, "job", takeover=True, reason="x").lease.token == first.token


def test_someone_elses_live_claim_is_lease_held_naming_holder_task_and_deadline(
    svc: Service, clock: tenure.FakeClock
) -> None:
    lease = svc.items.claim(ALICE, "job", ttl_ms=10_000, task="run-1").lease
    clock.advance(9_999)  # still live
    before = snapshot(svc, "job")
    for takeover in (False, True):
        with pytest.raises(LeaseHeld) as held:
            svc.items.claim(BOB, "job", takeover=takeover, reason="mine now")
        err = held.value
        assert (err.holder, err.task, err.expires_at, err.token, err.key) == (
            "alice",
            "run-1",
            lease.expires_at,
            lease.token,
            "items/job",
        )
    after = snapshot(svc, "job")
    assert after[1:2] == before[1:2]  # item, lease and history unchanged
    assert svc.contention("items/job") == 2  # the refusals are counted and recorded
    conflicts = svc.events(type="conflict")  # (one requester's refusals: one event counts them)
    assert [(e.actor, e.holder, e.data["repeats"]) for e in conflicts] == [("bob", "alice", 2)]


def test_someone_elses_lapsed_claim_is_assigned_to_other_unless_taken_over(
    svc: Service, clock: tenure.FakeClock
) -> None:
    lease = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease
    clock.advance(1_000)  # the deadline is exclusive: lapsed now
    before = snapshot(svc, "job")
    with pytest.raises(AssignedToOther) as refused:
        svc.items.claim(BOB, "job")
    err = refused.value
    assert (err.assignee, err.lease_state, err.lapsed_at, err.key) == (
        "alice",
        "expired",
        lease.expires_at,
        "items/job",
    )
    refused_and_counted(svc, before, "job")
    assert svc.contention("items/job") == 1
    (conflict,) = svc.events(type="conflict")
    assert (conflict.actor, conflict.data["code"]) == ("bob", "assigned_to_other")
    svc.reap()  # recording the expiry does not free the item either
    with pytest.raises(AssignedToOther):
        svc.items.claim(BOB, "job")
    assert svc.items.get("job").item.assignee == "alice"


def test_a_force_released_claim_keeps_its_edge_against_others(svc: Service) -> None:
    svc.items.claim(ALICE, "job")
    svc.items.force_release(ADMIN, "job", reason="stuck")
    with pytest.raises(AssignedToOther) as refused:
        svc.items.claim(BOB, "job")
    assert (refused.value.assignee, refused.value.lease_state) == ("alice", "revoked")


def test_a_takeover_moves_the_edge_with_a_new_epoch_and_records_why(
    svc: Service, clock: tenure.FakeClock
) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000, task="A").lease
    lapse(clock, 1_000)
    now = clock.now_ms()
    took = svc.items.claim(BOB, "job", takeover=True, reason="alice stopped answering")
    assert took.lease.token > old.token
    assert (took.lease.holder, took.item.assignee, took.item.epoch, took.item.status) == (
        "bob",
        "bob",
        took.lease.token,
        "in_progress",
    )
    assert svc.items.get("job").transfers[-1] == Transfer(
        "job", "alice", "bob", took.lease.token, "taken_over", "bob", now, "alice stopped answering"
    )
    # The lapsed lease ended by the takeover, recorded once, not also as expired.
    ended = [e for e in svc.events(key="items/job") if e.token == old.token and e.type in ENDINGS]
    endings = [(e.type, e.holder, e.task, e.actor, e.reason) for e in ended]
    assert endings == [("taken_over", "alice", "A", "bob", "alice stopped answering")]
    assert svc.reap() == []
    claimed = svc.events(type="claimed")[-1]
    assert (claimed.actor, claimed.reason, claimed.data["previous"]) == (
        "bob",
        "alice stopped answering",
        "alice",
    )
    assert claimed.data["transfer"] == "taken_over"
    with pytest.raises(LeaseLost) as lost:  # the old holder learns how its lease ended
        svc.items.renew(ALICE, "job", epoch=old.token)
    assert lost.value.reason == "taken_over"


def test_a_takeover_after_the_expiry_was_recorded_keeps_that_ending(
    svc: Service, clock: tenure.FakeClock
) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease
    lapse(clock, 1_000)
    assert [e.token for e in svc.reap()] == [old.token]
    took = svc.items.claim(BOB, "job", takeover=True, reason="gone")
    assert took.lease.token == old.token + 1
    assert svc.events(type="taken_over") == []  # the lease had ended already: expired
    assert [t.reason for t in svc.items.get("job").transfers] == ["claimed", "taken_over"]


def test_takeover_of_an_unassigned_item_is_a_plain_claim(
    svc: Service, clock: tenure.FakeClock
) -> None:
    claim = svc.items.claim(BOB, "job", takeover=True, reason="why not")
    now = clock.now_ms()
    assert svc.items.get("job").transfers == (
        Transfer("job", None, "bob", claim.lease.token, "claimed", "bob", now, "why not"),
    )


def test_reclaiming_your_own_lapsed_claim_gets_a_new_epoch(
    svc: Service, clock: tenure.FakeClock
) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease
    lapse(clock, 1_000)
    new = svc.items.claim(ALICE, "job")
    assert new.lease.token == old.token + 1 and new.item.epoch == new.lease.token
    transfers = svc.items.get("job").transfers
    assert [(t.reason, t.from_, t.to, t.epoch) for t in transfers] == [
        ("claimed", None, "alice", old.token),
        ("claimed", "alice", "alice", new.lease.token),
    ]
    expired = svc.events(type="expired")  # the lapse is recorded exactly once
    assert [(e.token, e.holder) for e in expired] == [(old.token, "alice")]
    assert svc.reap() == []


def test_after_a_release_anyone_may_claim(svc: Service) -> None:
    first = svc.items.claim(ALICE, "job").lease
    svc.items.release(ALICE, "job")
    second = svc.items.claim(BOB, "job")
    assert second.lease.token == first.token + 1 and second.item.assignee == "bob"
    assert svc.items.get("job").transfers[-1].from_ is None


def test_claiming_an_unknown_item_is_not_found_and_makes_no_lease(svc: Service) -> None:
    with pytest.raises(NotFound) as missing:
        svc.items.claim(ALICE, "nope")
    assert (missing.value.what, missing.value.key) == ("item", "items/nope")
    with pytest.raises(NotFound):
        svc.get("items/nope")
    # the fixture's item only (and its principals)
    assert [e.type for e in svc.events() if e.key] == ["item_created"]


# update: setting status in_progress claims, with the same rules, all or nothing --------------
def test_update_to_in_progress_claims_implicitly(svc: Service, clock: tenure.FakeClock) -> None:
    view = svc.items.update(BOB, "job", status="in_progress", title="renamed", priority=0)
    assert (view.item.assignee, view.item.status, view.lease_state) == (
        "bob",
        "in_progress",
        "live",
    )
    assert (view.item.title, view.item.priority) == ("renamed", 0)
    assert view.lease is not None and view.lease.holder == "bob"
    assert view.item.epoch == view.lease.token == 1
    assert view.lease.ttl_ms == 30_000  # the policy's default ttl
    assert [(t.reason, t.to) for t in view.transfers] == [("claimed", "bob")]
    # updating again renews the claim, same epoch
    clock.advance(1_000)
    again = svc.items.update(BOB, "job", status="in_progress", body="details")
    assert again.lease is not None and again.lease.token == 1 and again.lease.renewals == 1
    assert (again.item.body, again.item.title) == ("details", "renamed")


def test_update_to_in_progress_over_a_live_claim_is_lease_held_and_changes_nothing(
    svc: Service,
) -> None:
    svc.items.claim(ALICE, "job", task="run-1")
    before = snapshot(svc, "job")
    with pytest.raises(tenure.NotHolder) as edit:  # only the assignee edits a claimed item
        svc.items.update(BOB, "job", title="hijacked", labels=["x"], status="in_progress")
    assert edit.value.holder == "alice"
    with pytest.raises(LeaseHeld) as held:
        svc.items.update(BOB, "job", status="in_progress")
    assert (held.value.holder, held.value.task) == ("alice", "run-1")
    after = snapshot(svc, "job")
    assert svc.items.get("job").item.title == "write the report"
    assert after[1:2] == before[1:2]


def test_update_to_in_progress_over_a_lapsed_claim_is_assigned_to_other_and_changes_nothing(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.claim(ALICE, "job", ttl_ms=1_000)
    lapse(clock, 1_000)
    before = snapshot(svc, "job")
    with pytest.raises(tenure.NotHolder):  # the edits alone are refused first
        svc.items.update(BOB, "job", title="hijacked", priority=0, status="in_progress")
    assert snapshot(svc, "job") == before
    with pytest.raises(AssignedToOther) as refused:
        svc.items.update(BOB, "job", status="in_progress")
    assert refused.value.assignee == "alice"
    refused_and_counted(svc, before, "job")


def test_update_of_the_status_of_someone_elses_item_changes_nothing(svc: Service) -> None:
    svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    for status in ("open", "blocked"):
        with pytest.raises(Conflict) as refused:
            svc.items.update(BOB, "job", status=status)
        assert refused.value.field == "status"
        with pytest.raises(tenure.NotHolder) as not_theirs:
            svc.items.update(BOB, "job", title="hijacked", status=status)
        assert not_theirs.value.holder == "alice"
    assert snapshot(svc, "job") == before


def test_update_of_a_closed_item_is_a_conflict(svc: Service) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    svc.items.complete(ALICE, "job", epoch, result="ok")
    before = snapshot(svc, "job")
    for changes in ({"title": "x"}, {"status": "in_progress"}, {"status": "open"}):
        with pytest.raises(Conflict) as refused:
            svc.items.update(ALICE, "job", **changes)
        assert refused.value.field == "status"
    assert snapshot(svc, "job") == before


# dispatch: a new child agent claims the item, in one transaction ---------------------------
def test_dispatch_creates_a_child_agent_and_claims_for_it(svc: Service) -> None:
    sent = svc.items.dispatch(ALICE, "job", agent="r1", ttl_ms=20_000, task="review")
    assert sent.agent == tenure.Principal("alice/r1", "agent", (), "alice")
    assert svc.store.get_principal("alice/r1") == sent.agent
    assert svc.store.principal_by_token(hash_token(sent.token)) == sent.agent
    assert (sent.lease.holder, sent.lease.ttl_ms, sent.lease.task) == ("alice/r1", 20_000, "review")
    assert (sent.item.assignee, sent.item.epoch) == ("alice/r1", sent.lease.token)
    assert [(t.reason, t.to, t.actor) for t in svc.items.get("job").transfers] == [
        ("claimed", "alice/r1", "alice")  # the dispatcher's act
    ]
    (event,) = svc.events(type="dispatched")
    assert (event.actor, event.holder, event.data["agent"]) == ("alice", "alice/r1", "alice/r1")
    # the agent works the item with its epoch; its parent sees the claim and may end it
    svc.items.progress(sent.agent, "job", sent.lease.token, "on it")
    assert [v.item.id for v in svc.items.queue("alice")] == ["job"]
    forced = svc.items.force_release(ALICE, "job", reason="redo")
    assert forced.lease.state == "force_released"


def test_a_second_dispatch_is_refused_naming_the_holder_and_creates_no_agent(
    svc: Service,
) -> None:
    first = svc.items.dispatch(ALICE, "job")
    assert first.agent.name.startswith("alice/agent-") and first.agent.parent == "alice"
    before = snapshot(svc, "job")
    with pytest.raises(LeaseHeld) as held:
        svc.items.dispatch(ALICE, "job", agent="second")
    assert held.value.holder == first.agent.name
    assert svc.store.get_principal("alice/second") is None
    assert snapshot(svc, "job")[1:2] == before[1:2]
    assert svc.store.list_principals() == before[5]
    with pytest.raises(Conflict) as taken:  # the same agent name twice
        svc.items.create(ALICE, "other", id="other")
        svc.items.dispatch(ALICE, "other", agent=first.agent.name.split("/")[1])
    assert taken.value.field == "agent"
    assert svc.items.get("other").item.assignee is None


def test_dispatching_someone_elses_lapsed_claim_is_refused_and_creates_no_agent(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.claim(BOB, "job", ttl_ms=1_000)
    lapse(clock, 1_000)
    before = snapshot(svc, "job")
    with pytest.raises(AssignedToOther):
        svc.items.dispatch(ALICE, "job", agent="r1")
    refused_and_counted(svc, before, "job")
    assert svc.store.get_principal("alice/r1") is None
