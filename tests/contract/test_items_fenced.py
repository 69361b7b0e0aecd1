"""Fenced progress and completion, cancel, and the ownership history (docs/claims.md; SPEC
invariant 4) — on both backends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import Conflict, Forbidden, InvalidRequest, Principal, Service, StaleToken
from tenure.core.items import REASONS, Transfer
from tenure.core.models import ENDINGS

from ._items import ADMIN, AGENT, ALICE, BOB, BOSS, CAROL, SUPERVISOR, lapse, org, snapshot


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    service = org(make_service)
    service.items.create(CAROL, "write the report", id="job")
    return service


def took_over(svc: Service, clock: tenure.FakeClock) -> tuple[int, int]:
    """alice claimed ``job`` (epoch a), lapsed, and bob took it over (epoch b)."""
    a = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease.token
    lapse(clock, 1_000)
    b = svc.items.claim(BOB, "job", takeover=True, reason="alice is gone").lease.token
    return a, b


# progress ---------------------------------------------------------------------------------
def test_progress_with_the_current_epoch_is_recorded(svc: Service, clock: tenure.FakeClock) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    clock.advance(1_000)
    now = clock.now_ms()
    item = svc.items.progress(ALICE, "job", epoch, "half way", percent=50, data={"rows": 3})
    assert item.progress == {
        "message": "half way",
        "percent": 50,
        "data": {"rows": 3},
        "by": "alice",
        "at": now,
    }
    assert (item.progress_at, item.updated_at, item.status) == (now, now, "in_progress")
    assert svc.items.get("job").item == item
    item = svc.items.progress(ALICE, "job", epoch, "nearly")  # the latest report replaces it
    assert item.progress == {"message": "nearly", "by": "alice", "at": now}
    events = svc.events(type="progress")
    assert [(e.actor, e.token, e.data["message"]) for e in events] == [
        ("alice", epoch, "half way"),
        ("alice", epoch, "nearly"),
    ]
    assert events[0].data["percent"] == 50 and events[0].data["data"] == {"rows": 3}
    assert [t.reason for t in svc.items.get("job").transfers] == ["claimed"]  # not a transfer


@pytest.mark.parametrize("verb", ["progress", "complete"])
def test_a_stale_epoch_is_refused_naming_the_current_one_and_its_holder(
    svc: Service, clock: tenure.FakeClock, verb: str
) -> None:
    a, b = took_over(svc, clock)
    assert b > a
    before = snapshot(svc, "job")
    with pytest.raises(StaleToken) as stale:
        if verb == "progress":
            svc.items.progress(ALICE, "job", a, "still here")
        else:
            svc.items.complete(ALICE, "job", a, result={"by": "A"}, op_id="a-1")
    assert (stale.value.token, stale.value.current_token, stale.value.holder) == (a, b, "bob")
    assert stale.value.key == "items/job"
    assert snapshot(svc, "job") == before
    # an epoch never issued is no better
    with pytest.raises(StaleToken):
        svc.items.progress(BOB, "job", b + 1, "from the future")
    # the refused op_id was not consumed: the current holder may use it
    assert svc.items.complete(BOB, "job", b, result="ok", op_id="a-1").duplicate is False


def test_progress_on_a_never_claimed_item_is_stale(svc: Service) -> None:
    with pytest.raises(StaleToken) as stale:
        svc.items.progress(ALICE, "job", 1, "hello")
    assert stale.value.current_token is None
    assert svc.items.get("job").item.progress is None


@pytest.mark.parametrize("reaped", [False, True], ids=["unrecorded", "recorded"])
def test_the_current_epoch_is_accepted_after_the_lease_lapsed_if_nobody_claimed_since(
    svc: Service, clock: tenure.FakeClock, reaped: bool
) -> None:
    epoch = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease.token
    lapse(clock, 1_000)
    if reaped:
        assert len(svc.reap()) == 1
    assert svc.items.progress(ALICE, "job", epoch, "late").progress["message"] == "late"  # type: ignore[index]
    done = svc.items.complete(ALICE, "job", epoch, result=42)
    assert (done.item.status, done.item.result, done.duplicate) == ("done", 42, False)
    endings = [e.type for e in svc.events(key="items/job") if e.type in ENDINGS]
    assert endings == ["expired"]  # the lapse is the lease's one ending; completion adds none


# complete ---------------------------------------------------------------------------------
def test_complete_ends_the_lease_retires_the_edge_and_stores_the_result(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job", task="run-1").lease.token
    clock.advance(1_000)
    done = svc.items.complete(ALICE, "job", epoch, result={"rows": [1, 2]}, op_id="op-1")
    assert done.duplicate is False
    item = done.item
    assert (item.status, item.assignee, item.result, item.epoch) == (
        "done",
        None,
        {"rows": [1, 2]},
        epoch,
    )
    view = svc.items.get("job")
    assert view.item == item and view.lease_state == "none"
    assert svc.get("items/job").state == "released"
    assert view.transfers[-1] == Transfer(
        "job", "alice", None, epoch, "completed", "alice", clock.now_ms()
    )
    released = svc.events(type="released")
    assert [(e.holder, e.task, e.actor, e.reason) for e in released] == [
        ("alice", "run-1", "alice", "completed")
    ]
    completed = svc.events(type="completed")
    assert [(e.key, e.actor, e.token, e.holder) for e in completed] == [
        ("items/job", "alice", epoch, "alice")
    ]
    assert svc.items.queue("alice") == [] and svc.items.ready() == []


def test_complete_with_the_same_op_id_returns_the_first_result_and_changes_nothing(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    first = svc.items.complete(ALICE, "job", epoch, result=[1], op_id="op-1")
    clock.advance(1_000)
    before = snapshot(svc, "job")
    again = svc.items.complete(ALICE, "job", epoch, result="different", op_id="op-1")
    assert (again.duplicate, again.item) == (True, first.item)
    assert again.item.result == [1]
    assert snapshot(svc, "job") == before
    # without the op_id (or with another) a repeat is refused: the item is done
    for op_id in (None, "op-2"):
        with pytest.raises(Conflict) as closed:
            svc.items.complete(ALICE, "job", epoch, result="again", op_id=op_id)
        assert closed.value.field == "status"
    assert snapshot(svc, "job") == before


def test_a_done_item_refuses_claims_progress_and_cancel(svc: Service) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    svc.items.complete(ALICE, "job", epoch)
    before = snapshot(svc, "job")
    for refused in (
        lambda: svc.items.claim(BOB, "job"),
        lambda: svc.items.claim(ALICE, "job", takeover=True, reason="r"),
        lambda: svc.items.progress(ALICE, "job", epoch, "more"),
        lambda: svc.items.cancel(ADMIN, "job", reason="r"),
        lambda: svc.items.dispatch(ALICE, "job", agent="late"),
    ):
        with pytest.raises(Conflict) as closed:
            refused()
        assert closed.value.field == "status"
    assert snapshot(svc, "job") == before


# cancel -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("assignee", "actor", "ending"),
    [
        (ALICE, ALICE, "released"),  # the assignee
        (ALICE, SUPERVISOR, "force_released"),
        (AGENT, ALICE, "force_released"),  # an ancestor of the assignee
        (BOSS, ADMIN, "force_released"),
        (None, CAROL, None),  # the creator of an unassigned item
    ],
    ids=["assignee", "supervisor", "ancestor", "admin", "creator"],
)
def test_cancel_by_those_allowed_sets_cancelled_and_kills_the_epoch(
    svc: Service,
    clock: tenure.FakeClock,
    assignee: Principal | None,
    actor: Principal,
    ending: str | None,
) -> None:
    epoch = svc.items.claim(assignee, "job").lease.token if assignee else 0
    clock.advance(1_000)
    cancelled = svc.items.cancel(actor, "job", reason="not needed")
    assert (cancelled.status, cancelled.assignee, cancelled.epoch) == ("cancelled", None, epoch)
    assert svc.items.get("job").item == cancelled
    assert svc.items.get("job").transfers[-1] == Transfer(
        "job",
        assignee.name if assignee else None,
        None,
        epoch,
        "cancelled",
        actor.name,
        clock.now_ms(),
        "not needed",
    )
    event = svc.events(type="cancelled")[-1]
    assert (event.actor, event.reason, event.data["item"]) == (actor.name, "not needed", "job")
    if assignee is not None:
        assert svc.get("items/job").state == ending
        lease_end = svc.events(type=ending)[-1]  # type: ignore[arg-type]
        assert (lease_end.actor, lease_end.reason) == (actor.name, "not needed")
        with pytest.raises(StaleToken):
            svc.items.progress(assignee, "job", epoch, "still here")
    with pytest.raises(Conflict):
        svc.items.claim(BOB, "job")
    with pytest.raises(Conflict):
        svc.items.cancel(actor, "job", reason="again")


@pytest.mark.parametrize(
    ("assignee", "actor"),
    [(BOB, CAROL), (BOB, ALICE), (ALICE, AGENT), (BOSS, SUPERVISOR), (None, BOB)],
    ids=["creator-of-assigned", "unrelated", "child-over-parent", "over-admin", "not-creator"],
)
def test_cancel_by_anyone_else_is_forbidden_and_changes_nothing(
    svc: Service, assignee: Principal | None, actor: Principal
) -> None:
    if assignee is not None:
        svc.items.claim(assignee, "job")
    before = snapshot(svc, "job")
    with pytest.raises(Forbidden) as refused:
        svc.items.cancel(actor, "job", reason="mine to cancel?")
    assert (refused.value.actor, refused.value.reason) == (actor.name, "mine to cancel?")
    assert snapshot(svc, "job") == before


def test_cancelling_a_lapsed_claim_records_the_expiry_and_kills_the_epoch(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job", ttl_ms=1_000).lease.token
    lapse(clock, 1_000)
    svc.items.cancel(ALICE, "job", reason="gave up")
    endings = [e.type for e in svc.events(key="items/job") if e.type in ENDINGS]
    assert endings == ["expired"]
    with pytest.raises(StaleToken):
        svc.items.complete(ALICE, "job", epoch)


def test_cancel_needs_a_reason(svc: Service) -> None:
    svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    for reason in ("", None, "x" * 1025):
        with pytest.raises(InvalidRequest) as refused:
            svc.items.cancel(ALICE, "job", reason=reason)  # type: ignore[arg-type]
        assert refused.value.field == "reason"
    assert snapshot(svc, "job") == before


# the ownership history --------------------------------------------------------------------
def test_the_transfers_tell_the_whole_story_in_order(svc: Service, clock: tenure.FakeClock) -> None:
    def step() -> int:
        return clock.advance(1_000)

    t1 = step()
    e1 = svc.items.claim(ALICE, "job", ttl_ms=5_000).lease.token
    t2 = step()
    svc.items.release(ALICE, "job")
    t3 = step()
    e2 = svc.items.claim(BOB, "job", ttl_ms=1_000).lease.token
    step()
    svc.reap()  # bob's lease lapses: an expired event, not a transfer
    t4 = step()
    e3 = svc.items.claim(ALICE, "job", takeover=True, reason="bob is gone").lease.token
    t5 = step()
    svc.items.force_release(SUPERVISOR, "job", reason="stuck")
    t6 = step()
    e4 = svc.items.claim(ALICE, "job", takeover=True, reason="back to it").lease.token
    t7 = step()
    svc.items.complete(ALICE, "job", e4, result="ok")
    svc.items.create(CAROL, "other", id="other")
    t8 = step()
    svc.items.claim(BOB, "other")
    svc.items.cancel(BOB, "other", reason="duplicate")

    assert e1 < e2 < e3 < e4
    history = [
        (t.reason, t.from_, t.to, t.epoch, t.actor, t.at, t.note)
        for t in svc.items.get("job").transfers
    ]
    assert history == [
        ("claimed", None, "alice", e1, "alice", t1, None),
        ("released", "alice", None, e1, "alice", t2, None),
        ("claimed", None, "bob", e2, "bob", t3, None),
        ("taken_over", "bob", "alice", e3, "alice", t4, "bob is gone"),
        ("force_released", "alice", "alice", e3, "sup", t5, "stuck"),
        ("taken_over", "alice", "alice", e4, "alice", t6, "back to it"),  # it was revoked
        ("completed", "alice", None, e4, "alice", t7, None),
    ]
    other = [(t.reason, t.actor, t.at, t.note) for t in svc.items.get("other").transfers]
    assert other == [("claimed", "bob", t8, None), ("cancelled", "bob", t8, "duplicate")]
    assert [e.token for e in svc.events(type="expired")] == [e2]
    assert {t.reason for t in svc.items.get("job").transfers} <= set(REASONS)


def test_every_transfer_is_also_an_event(svc: Service, clock: tenure.FakeClock) -> None:
    svc.items.claim(ALICE, "job", ttl_ms=1_000)
    svc.items.release(ALICE, "job")
    svc.items.claim(BOB, "job", ttl_ms=1_000)
    lapse(clock, 1_000)
    svc.items.claim(ALICE, "job", takeover=True, reason="bob is gone")
    svc.items.force_release(ADMIN, "job", reason="stuck")
    epoch = svc.items.claim(ALICE, "job", takeover=True, reason="back to it").lease.token
    svc.items.complete(ALICE, "job", epoch)
    item_events = [
        (e.type, e.actor, e.data.get("transfer"))
        for e in svc.events(key="items/job")
        if e.type in ("claimed", "released_item", "taken_over", "force_released", "completed")
    ]
    assert item_events == [
        ("claimed", "alice", "claimed"),
        ("released_item", "alice", None),
        ("claimed", "bob", "claimed"),
        ("taken_over", "alice", None),  # the lease's ending
        ("claimed", "alice", "taken_over"),
        ("force_released", "root", None),
        ("claimed", "alice", "taken_over"),  # a revoked claim is taken back
        ("completed", "alice", None),
    ]
