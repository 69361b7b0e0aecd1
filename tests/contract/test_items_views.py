"""The views of the work queue (docs/claims.md): queue with live/stalled/lapsed, ready, briefing
and its cursor, list and get — on both backends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import Service
from tenure.core.models import EventDraft
from tenure.core.work import State
from tenure.service.queue import DEFAULT_STALL_MS, WorkQueue

from ._items import ADMIN, AGENT, ALICE, BOB, CAROL, SUPERVISOR, lapse, org

MINUTE = 60_000


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    return org(make_service)


def states(work: WorkQueue, principal: str) -> dict[str, str]:
    return {v.item.id: v.lease_state for v in work.queue(principal)}


# queue ------------------------------------------------------------------------------------
def test_the_queue_shows_assigned_items_with_their_lease_state(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for item_id in ("live", "lapsing", "forced", "done", "agents", "bobs", "free"):
        svc.items.create(CAROL, item_id, id=item_id)
    svc.items.claim(ALICE, "live", ttl_ms=60_000)
    svc.items.claim(ALICE, "lapsing", ttl_ms=1_000)
    svc.items.claim(ALICE, "forced", ttl_ms=60_000)
    svc.items.force_release(ADMIN, "forced", reason="stuck")
    epoch = svc.items.claim(ALICE, "done").lease.token
    svc.items.complete(ALICE, "done", epoch)
    svc.items.claim(AGENT, "agents", ttl_ms=60_000)
    svc.items.claim(BOB, "bobs", ttl_ms=60_000)
    lapse(clock, 1_000)
    assert states(svc.items, "alice") == {
        "live": "live",
        "lapsing": "lapsed",
        "forced": "revoked",
        "agents": "live",  # a parent sees the claims of the agents it dispatched
    }
    assert states(svc.items, "alice/agent") == {"agents": "live"}
    assert states(svc.items, "bob") == {"bobs": "live"}
    assert svc.items.queue("nobody") == []
    lapsed = next(v for v in svc.items.queue("alice") if v.item.id == "lapsing")
    assert lapsed.lease is not None and lapsed.lease.state == "expired"
    live = next(v for v in svc.items.queue("alice") if v.item.id == "live")
    assert live.lease == svc.get("items/live")
    svc.reap()  # recording the expiry changes nothing: the edge stays until released
    assert states(svc.items, "alice")["lapsing"] == "lapsed"
    svc.items.release(ALICE, "lapsing")
    assert "lapsing" not in states(svc.items, "alice")


def test_a_live_claim_without_progress_for_the_stall_threshold_is_stalled(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.create(CAROL, "job", id="job")
    epoch = svc.items.claim(ALICE, "job", ttl_ms=60_000).lease.token
    svc.items.extend(ALICE, "job", by_ms=60 * MINUTE)
    clock.advance(DEFAULT_STALL_MS)
    assert states(svc.items, "alice") == {"job": "live"}  # not older than the threshold yet
    clock.advance(1)
    assert states(svc.items, "alice") == {"job": "stalled"}
    assert svc.items.get("job").lease_state == "stalled"
    svc.items.renew(ALICE, "job")  # a heartbeat is not progress
    assert states(svc.items, "alice") == {"job": "stalled"}
    svc.items.progress(ALICE, "job", epoch, "still going")
    assert states(svc.items, "alice") == {"job": "live"}
    clock.advance(DEFAULT_STALL_MS + 1)
    assert states(svc.items, "alice") == {"job": "stalled"}
    # a stalled claim is still carried, not lapsed
    brief = svc.items.briefing(ALICE)
    assert [(v.item.id, v.lease_state) for v in brief.carrying] == [("job", "stalled")]
    assert brief.lapsed == ()


def test_the_stall_threshold_is_a_setting(svc: Service, clock: tenure.FakeClock) -> None:
    svc.items.create(CAROL, "job", id="job")
    svc.items.claim(ALICE, "job", ttl_ms=60_000)
    quick = WorkQueue(svc, stall_ms=10_000)
    clock.advance(10_001)
    assert (states(quick, "alice"), states(svc.items, "alice")) == (
        {"job": "stalled"},
        {"job": "live"},
    )


def test_progress_of_an_earlier_claim_does_not_make_a_new_claim_stalled(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.create(CAROL, "job", id="job")
    quick = WorkQueue(svc, stall_ms=10_000)
    epoch = svc.items.claim(ALICE, "job", ttl_ms=60_000).lease.token
    svc.items.progress(ALICE, "job", epoch, "started")
    svc.items.release(ALICE, "job")
    clock.advance(20_000)
    svc.items.claim(BOB, "job", ttl_ms=60_000)  # a fresh claim: not stalled yet
    assert states(quick, "bob") == {"job": "live"}
    clock.advance(10_001)
    assert states(quick, "bob") == {"job": "stalled"}


# ready ------------------------------------------------------------------------------------
def test_ready_lists_open_unassigned_unleased_items_by_priority_then_age(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for item_id, priority in (
        ("old-low", 5),
        ("old-top", 0),
        ("b-mid", 2),
        ("a-mid", 2),  # same instant as b-mid: by id
        ("new-top", 0),
        ("claimed", 0),
        ("lapsed", 0),
        ("blocked", 0),
        ("leased", 0),
        ("cancelled", 0),
    ):
        if item_id != "a-mid":
            clock.advance(1_000)
        svc.items.create(CAROL, item_id, priority=priority, id=item_id)
    svc.items.claim(ALICE, "claimed", ttl_ms=60_000)
    svc.items.claim(ALICE, "lapsed", ttl_ms=1_000)
    svc.items.update(CAROL, "blocked", status="blocked")
    with pytest.raises(tenure.InvalidRequest):  # item keys belong to items
        svc.acquire(BOB, "items/leased", ttl_ms=5_000)
    svc.items.cancel(CAROL, "cancelled", reason="dup")
    lapse(clock, 1_000)
    expected = ["old-top", "new-top", "leased", "a-mid", "b-mid", "old-low"]
    assert [i.id for i in svc.items.ready(limit=2)] == ["old-top", "new-top"]
    assert [i.id for i in svc.items.ready()] == expected
    svc.items.release(ALICE, "lapsed")  # released work is ready again
    assert [i.id for i in svc.items.ready(limit=3)] == ["old-top", "new-top", "lapsed"]
    assert all(i.status == "open" and i.assignee is None for i in svc.items.ready())


# briefing ---------------------------------------------------------------------------------
def test_the_briefing_says_what_i_carry_what_lapsed_and_the_top_of_the_ready_queue(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for item_id, priority in (("mine", 3), ("lapsing", 3), ("agents", 3), ("t1", 1), ("t0", 0)):
        svc.items.create(CAROL, item_id, priority=priority, id=item_id)
    svc.items.claim(ALICE, "mine", ttl_ms=60_000)
    svc.items.claim(ALICE, "lapsing", ttl_ms=1_000)
    svc.items.claim(AGENT, "agents", ttl_ms=60_000)
    lapse(clock, 1_000)
    brief = svc.items.briefing(ALICE, ready=1)
    assert brief.principal == "alice"
    assert sorted(v.item.id for v in brief.carrying) == ["agents", "mine"]
    assert [(v.item.id, v.lease_state) for v in brief.lapsed] == [("lapsing", "lapsed")]
    assert [i.id for i in brief.ready] == ["t0"]
    assert [i.id for i in svc.items.briefing(ALICE).ready] == ["t0", "t1"]
    assert set(brief.to_dict()) == {
        "principal",
        "carrying",
        "lapsed",
        "happened",
        "ready",
        "stalled",
        "parked",
    }


def test_the_briefing_says_what_happened_to_my_work_since_i_last_looked(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for item_id in ("expiring", "taken", "forced", "cancelled", "by-agent", "own", "bobs"):
        svc.items.create(CAROL, item_id, id=item_id)
    assert svc.items.briefing(ALICE).happened == ()
    svc.items.claim(ALICE, "expiring", ttl_ms=1_000)
    svc.items.claim(ALICE, "taken", ttl_ms=1_000)
    svc.items.claim(ALICE, "forced", ttl_ms=60_000)
    svc.items.claim(ALICE, "cancelled", ttl_ms=60_000)
    agent_epoch = svc.items.claim(AGENT, "by-agent", ttl_ms=60_000).lease.token
    own_epoch = svc.items.claim(ALICE, "own", ttl_ms=60_000).lease.token
    svc.items.claim(BOB, "bobs", ttl_ms=1_000)
    lapse(clock, 1_000)
    svc.reap()  # expiring, taken and bobs lapse: recorded
    svc.items.claim(BOB, "taken", takeover=True, reason="alice is gone")
    svc.items.force_release(SUPERVISOR, "forced", reason="stuck")
    svc.items.cancel(ADMIN, "cancelled", reason="not needed")
    svc.items.complete(AGENT, "by-agent", agent_epoch, result="ok")
    svc.items.complete(ALICE, "own", own_epoch)  # my own doing: not news to me
    happened = svc.items.briefing(ALICE).happened
    seen = {(e.type, e.data.get("item") or e.key) for e in happened}
    assert seen == {
        ("expired", "items/expiring"),
        ("expired", "items/taken"),
        ("claimed", "taken"),  # bob took it over
        ("force_released", "items/forced"),
        ("force_released", "items/cancelled"),  # the cancellation ended my lease
        ("cancelled", "cancelled"),
        ("completed", "by-agent"),
    }
    assert [e.id for e in happened] == sorted(e.id for e in happened)
    assert next(e for e in happened if e.type == "cancelled").actor == "root"
    # the cursor moved: a second briefing shows only what happened since
    assert svc.items.briefing(ALICE).happened == ()
    svc.items.claim(ALICE, "expiring")  # my own claim: nothing new for me
    assert svc.items.briefing(ALICE).happened == ()
    svc.items.force_release(ADMIN, "expiring", reason="again")
    assert [(e.type, e.actor) for e in svc.items.briefing(ALICE).happened] == [
        ("force_released", "root")
    ]
    # each principal has its own cursor
    bobs = {(e.type, e.key) for e in svc.items.briefing(BOB).happened}
    assert bobs == {("expired", "items/bobs")}


def test_a_briefing_after_a_busy_time_shows_each_happening_exactly_once(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.create(CAROL, "job", id="job")
    svc.items.claim(ALICE, "job", ttl_ms=60_000)
    with svc.store.key_tx("noise", create=True) as tx:  # more events than one window holds
        tx.append([EventDraft("noise", "noise")] * 1_000)
    svc.items.force_release(ADMIN, "job", reason="stuck")
    seen = []
    for _ in range(3):
        seen.extend((e.type, e.key) for e in svc.items.briefing(ALICE).happened)
    assert seen == [("force_released", "items/job")]


# list and get -----------------------------------------------------------------------------
def test_list_filters_by_status_assignee_and_label(svc: Service, clock: tenure.FakeClock) -> None:
    svc.items.create(CAROL, "a", id="a", labels=["x", "y", "x"], priority=3)
    clock.advance(1)
    svc.items.create(CAROL, "b", id="b", labels=["y"], priority=1)
    clock.advance(1)
    svc.items.create(CAROL, "c", id="c")
    svc.items.claim(ALICE, "c")
    assert [i.id for i in svc.items.list()] == ["b", "c", "a"]  # by priority
    assert [i.id for i in svc.items.list(status="in_progress")] == ["c"]
    assert [i.id for i in svc.items.list(status="open", label="y")] == ["b", "a"]
    assert [i.id for i in svc.items.list(assignee="alice")] == ["c"]
    assert [i.id for i in svc.items.list(limit=1)] == ["b"]
    assert svc.items.list(label="nope") == [] and svc.items.list(status="done") == []
    assert svc.items.get("a").item.labels == ("x", "y")


def test_get_shows_the_item_its_current_lease_and_its_history(
    svc: Service, clock: tenure.FakeClock
) -> None:
    created = svc.items.create(CAROL, "job", id="job", body="details", parent=None)
    view = svc.items.get("job")
    assert (view.item, view.lease, view.lease_state, view.transfers) == (created, None, "none", ())
    claim = svc.items.claim(BOB, "job")
    view = svc.items.get("job")
    assert (view.lease, view.lease_state) == (claim.lease, "live")
    assert view.to_dict()["transfers"][0]["from"] is None
    child = svc.items.create(CAROL, "part", id="part", parent="job")
    assert svc.items.get("part").item.parent == "job" and child.created_by == "carol"


# the state word and its moment ------------------------------------------------------------
def test_reassigned_and_revoked_claims_read_as_what_they_are(
    svc: Service, clock: tenure.FakeClock
) -> None:
    """The issue's case: a live claim reassigned read "lapsed" with a lapse time still ahead;
    a revoked one had the deadline of its dead lease as its moment. Every view (get, queue,
    briefing) reads reassigned or revoked, at the moment it happened, by whom and why."""
    for item_id in ("moved", "forced", "lapsing"):
        svc.items.create(CAROL, item_id, id=item_id)
    svc.items.claim(ALICE, "moved", ttl_ms=60_000)
    svc.items.claim(ALICE, "forced", ttl_ms=60_000)
    svc.items.claim(ALICE, "lapsing", ttl_ms=1_000)
    clock.advance(5_000)
    at = clock.now_ms()
    svc.items.reassign(ADMIN, "moved", "bob", reason="alice is away")
    svc.items.force_release(ADMIN, "forced", reason="wrong approach")
    clock.advance(2_000)

    moved = svc.items.get("moved")
    assert moved.lease_state == "reassigned"
    assert moved.state == State("reassigned", at, ADMIN.name, "alice is away", "bob")
    [queued] = svc.items.queue("bob")
    assert (queued.lease_state, queued.state) == ("reassigned", moved.state)
    assert [v.item.id for v in svc.items.briefing(BOB).lapsed] == ["moved"]

    forced = svc.items.get("forced")
    assert forced.state == State("revoked", at, ADMIN.name, "wrong approach")
    mine = {v.item.id: v.state for v in svc.items.queue("alice")}
    assert mine["forced"] == forced.state and "moved" not in mine
    # a lapsed claim's moment is when its lease ran out: in the past
    assert mine["lapsing"].word == "lapsed" and mine["lapsing"].at is not None
    assert mine["lapsing"].at <= clock.now_ms()
    # nobody's moment of a state that happened lies ahead of now
    for view in (moved, forced, *svc.items.queue("alice")):
        assert view.state.at is None or view.state.at <= clock.now_ms()

    # bob claims: live, its moment when the lease expires
    svc.items.claim(BOB, "moved", ttl_ms=60_000)
    live = svc.items.get("moved").state
    assert (live.word, live.at) == ("live", clock.now_ms() + 60_000)
