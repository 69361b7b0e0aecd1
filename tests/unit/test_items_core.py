"""The pure decisions of :mod:`tenure.core.items`: plain dataclasses in, decisions out, no I/O.

Each test checks what an :class:`ItemDecision` carries: the lease decision (record to save,
its events, its error), the item to save, the transfers and events, and the result or error.
"""

from __future__ import annotations

import pytest

from tenure.core.items import (
    Item,
    ItemDecision,
    ItemView,
    Transfer,
    check_epoch,
    decide_cancel,
    decide_claim,
    decide_complete,
    decide_item_release,
    decide_progress,
    item_key,
    lease_state,
)
from tenure.core.models import EventDraft, KeyRecord, Principal
from tenure.errors import (
    AssignedToOther,
    Conflict,
    Forbidden,
    LeaseHeld,
    NotFound,
    NotHolder,
    StaleToken,
)

NOW = 1_700_000_000_000
ALICE = Principal("alice")
BOB = Principal("bob")
ADMIN = Principal("root", roles=("admin",))
KEY = "items/job"
STALL = 60_000


HELD = {"held_ms": 20_000}


def item(**changes: object) -> Item:
    """An open, unassigned item created a minute ago."""
    base = Item("job", "write the report", created_by="carol", created_at=NOW - 60_000)
    return base.update(**{"updated_at": NOW - 60_000, **changes})


def claimed(assignee: str = "alice", epoch: int = 3, **changes: object) -> Item:
    return item(**{"status": "in_progress", "assignee": assignee, "epoch": epoch, **changes})


def lease(
    holder: str = "alice", *, token: int = 3, expires_at: int = NOW + 10_000, **changes: object
) -> KeyRecord:
    """The record of a claim on ``items/job`` acquired 20 s ago, live until ``expires_at``."""
    return KeyRecord(
        key=KEY,
        token=token,
        holder=holder,
        task="run-1",
        ttl_ms=30_000,
        acquired_at=NOW - 20_000,
        renewed_at=NOW - 20_000,
        expires_at=expires_at,
    ).update(**changes)


def refused(decision: ItemDecision) -> Exception:
    with pytest.raises(Exception) as caught:
        decision.raise_or_result()
    return caught.value


# claim ------------------------------------------------------------------------------------
def test_claiming_a_free_item_takes_the_lease_and_writes_the_edge() -> None:
    d = decide_claim(item(), None, BOB, 5_000, "run-9", False, None, NOW)
    assert d.error is None and d.lease.error is None
    rec = d.lease.record
    assert rec is not None
    assert (rec.key, rec.token, rec.holder, rec.task, rec.expires_at) == (
        KEY,
        1,
        "bob",
        "run-9",
        NOW + 5_000,
    )
    assert d.item == item(status="in_progress", assignee="bob", epoch=1, updated_at=NOW, attempts=1)
    assert d.transfers == (Transfer("job", None, "bob", 1, "claimed", "bob", NOW),)
    assert [e.type for e in d.lease.events] == ["acquired"]
    assert d.events == (
        EventDraft(
            "claimed",
            KEY,
            "bob",
            None,
            1,
            actor="bob",
            reason=None,
            data={"item": "job", "previous": None, "transfer": "claimed"},
        ),
    )
    assert d.raise_or_result() == rec.lease(NOW)


def test_a_new_claim_gets_a_token_above_the_keys_last() -> None:
    ended = lease(token=7, ended="released")
    d = decide_claim(item(epoch=7), ended, BOB, 5_000, None, False, None, NOW)
    assert d.lease.record is not None and d.lease.record.token == 8
    assert d.item is not None and d.item.epoch == 8


def test_reclaiming_your_own_live_claim_renews_and_keeps_the_epoch() -> None:
    rec = lease()
    d = decide_claim(claimed(), rec, ALICE, 40_000, "run-2", False, None, NOW)
    assert d.item is None and d.transfers == () and d.events == ()
    renewed = d.lease.record
    assert renewed is not None
    assert (renewed.token, renewed.renewals, renewed.task, renewed.expires_at) == (
        3,
        1,
        "run-2",
        NOW + 40_000,
    )
    assert d.raise_or_result() == renewed.lease(NOW)


@pytest.mark.parametrize("takeover", [False, True])
def test_someone_elses_live_claim_is_lease_held_and_counted(takeover: bool) -> None:
    rec = lease()
    d = decide_claim(claimed(), rec, BOB, 5_000, "x", takeover, "why", NOW)
    err = refused(d)
    assert isinstance(err, LeaseHeld)
    assert (err.holder, err.task, err.expires_at, err.token) == ("alice", "run-1", NOW + 10_000, 3)
    assert d.item is None and d.transfers == ()
    assert d.lease.record == rec.update(conflicts=1)
    assert [(e.type, e.actor) for e in d.lease.events] == [("conflict", "bob")]


@pytest.mark.parametrize(
    ("rec", "state", "lapsed_at"),
    [
        (lease(expires_at=NOW), "expired", NOW),
        (lease(expires_at=NOW - 5, ended="expired"), "expired", NOW - 5),
        (lease(ended="force_released", fence_open=False), "force_released", NOW + 10_000),
        (None, "none", None),
    ],
    ids=["lapsed", "recorded", "force-released", "no-lease"],
)
def test_someone_elses_lapsed_claim_is_assigned_to_other(
    rec: KeyRecord | None, state: str, lapsed_at: int | None
) -> None:
    d = decide_claim(claimed(), rec, BOB, 5_000, None, False, None, NOW)
    err = refused(d)
    assert isinstance(err, AssignedToOther)
    assert (err.assignee, err.lease_state, err.lapsed_at, err.key) == (
        "alice",
        state,
        lapsed_at,
        KEY,
    )
    assert d.item is None and d.events == () and d.transfers == ()
    if rec is None:
        assert d.lease.record is None and d.lease.events == ()
        return
    # the refusal is counted as a conflict on the key, like lease_held
    assert d.lease.record is not None and d.lease.record.conflicts == rec.conflicts + 1
    assert d.lease.record.token == rec.token and d.lease.record.holder == rec.holder
    (conflict,) = [e for e in d.lease.events if e.type == "conflict"]
    assert (conflict.actor, conflict.data["code"]) == ("bob", "assigned_to_other")


def test_a_revoked_claim_needs_a_takeover_even_for_its_assignee() -> None:
    rec = lease(ended="force_released", fence_open=False)
    it = claimed(revoked=True)
    for who in (ALICE, BOB):
        err = refused(decide_claim(it, rec, who, 5_000, None, False, None, NOW))
        assert isinstance(err, AssignedToOther) and err.lease_state == "revoked"
    d = decide_claim(it, rec, ALICE, 5_000, None, True, "back to it", NOW)
    assert d.item is not None and (d.item.revoked, d.item.epoch) == (False, 4)
    assert [(t.reason, t.note) for t in d.transfers] == [("taken_over", "back to it")]


def test_a_stalled_claim_may_be_taken_over_like_a_lapsed_one() -> None:
    rec = lease()  # live
    assert isinstance(
        refused(decide_claim(claimed(), rec, BOB, 5_000, None, True, "r", NOW)), LeaseHeld
    )
    d = decide_claim(claimed(), rec, BOB, 5_000, None, True, "no progress", NOW, stalled=True)
    assert d.item is not None and d.item.assignee == "bob"
    assert [e.type for e in d.lease.events][:1] == ["taken_over"]
    # without takeover, a stalled claim is still held
    held = decide_claim(claimed(), rec, BOB, 5_000, None, False, None, NOW, stalled=True)
    assert isinstance(refused(held), LeaseHeld)


def test_a_takeover_ends_the_lapsed_lease_and_moves_the_edge() -> None:
    rec = lease(expires_at=NOW - 1)
    d = decide_claim(claimed(), rec, BOB, 5_000, None, True, "alice is gone", NOW)
    new = d.lease.record
    assert new is not None and (new.token, new.holder) == (4, "bob")
    lapsed = d.lease.events[0].data["deadline"]
    assert d.lease.events[0] == EventDraft(
        "taken_over",
        KEY,
        "alice",
        "run-1",
        3,
        actor="bob",
        reason="alice is gone",
        data={"held_ms": 19_999, "deadline": lapsed},
    )
    assert [e.type for e in d.lease.events] == ["taken_over", "acquired"]  # no "expired"
    assert d.item == claimed("bob", 4, updated_at=NOW, attempts=1)
    assert d.transfers == (
        Transfer("job", "alice", "bob", 4, "taken_over", "bob", NOW, "alice is gone"),
    )
    assert d.events[0].data == {"item": "job", "previous": "alice", "transfer": "taken_over"}
    assert d.events[0].reason == "alice is gone"


def test_a_takeover_of_an_already_ended_lease_adds_no_second_ending() -> None:
    rec = lease(expires_at=NOW - 1, ended="expired")
    d = decide_claim(claimed(), rec, BOB, 5_000, None, True, None, NOW)
    assert [e.type for e in d.lease.events] == ["acquired"]
    assert d.transfers[0].reason == "taken_over"


def test_reclaiming_your_own_lapsed_claim_is_a_new_epoch_and_records_the_expiry() -> None:
    rec = lease(expires_at=NOW - 1)
    d = decide_claim(claimed(), rec, ALICE, 5_000, None, False, None, NOW)
    assert [e.type for e in d.lease.events] == ["expired", "acquired"]
    assert d.transfers == (Transfer("job", "alice", "alice", 4, "claimed", "alice", NOW),)


@pytest.mark.parametrize("status", ["done", "cancelled"])
def test_a_closed_item_refuses_claims(status: str) -> None:
    d = decide_claim(item(status=status), None, BOB, 5_000, None, True, None, NOW)
    err = refused(d)
    assert isinstance(err, Conflict) and err.field == "status"
    assert d.lease.record is None and d.item is None


def test_decisions_on_a_missing_item_are_not_found() -> None:
    for d in (
        decide_claim(None, None, BOB, 5_000, None, False, None, NOW),
        decide_item_release(None, None, BOB, NOW),
        decide_progress(None, None, BOB, 1, {"message": "m"}, NOW),
        decide_complete(None, None, BOB, 1, None, NOW),
        decide_cancel(None, None, BOB, "r", True, NOW),
    ):
        assert isinstance(refused(d), NotFound)
        assert d.item is None and d.lease.record is None


# release ----------------------------------------------------------------------------------
def test_releasing_my_live_claim_ends_it_and_reopens_the_item() -> None:
    d = decide_item_release(claimed(), lease(), ALICE, NOW)
    assert d.lease.record == lease(ended="released")
    reopened = claimed(assignee=None, status="open", updated_at=NOW)
    assert d.item == reopened
    assert d.transfers == (Transfer("job", "alice", None, 3, "released", "alice", NOW),)
    assert [(e.type, e.data["previous"]) for e in d.events] == [("released_item", "alice")]
    assert d.raise_or_result() == (True, reopened)


def test_releasing_my_lapsed_claim_retires_the_edge_but_says_released_false() -> None:
    d = decide_item_release(claimed(status="blocked"), lease(expires_at=NOW), ALICE, NOW)
    assert [e.type for e in d.lease.events] == ["expired"]
    assert d.item == claimed(assignee=None, status="blocked", updated_at=NOW)  # not reopened
    assert d.raise_or_result() == (False, d.item)
    assert d.transfers[0].reason == "released"


def test_releasing_someone_elses_live_claim_is_not_holder() -> None:
    d = decide_item_release(claimed(), lease(), BOB, NOW)
    err = refused(d)
    assert isinstance(err, NotHolder) and err.holder == "alice"
    assert d.item is None and d.transfers == ()


@pytest.mark.parametrize(
    ("it", "rec"),
    [(claimed(), lease(expires_at=NOW - 1, ended="expired")), (item(), None)],
    ids=["someone-elses-lapsed", "never-claimed"],
)
def test_releasing_what_is_not_mine_changes_nothing(it: Item, rec: KeyRecord | None) -> None:
    d = decide_item_release(it, rec, BOB, NOW)
    assert (d.lease.record, d.item, d.transfers, d.events) == (None, None, (), ())
    assert d.raise_or_result() == (False, it)


# the fence: progress and completion -------------------------------------------------------
@pytest.mark.parametrize(
    ("it", "rec", "epoch", "current", "why"),
    [
        (claimed(epoch=4), lease(token=4), 3, 4, "is stale"),
        (claimed(epoch=4), lease(token=4), 5, 4, "is stale"),
        (item(), None, 1, None, "is stale"),
        (claimed(), lease(fence_open=False), 3, 3, "was revoked"),
        (claimed(epoch=2), lease(token=3), 3, 3, "was revoked"),  # a plain lease on the key
    ],
    ids=["older", "newer", "never-claimed", "revoked", "not-the-items-epoch"],
)
def test_only_the_current_open_epoch_passes_the_fence(
    it: Item, rec: KeyRecord | None, epoch: int, current: int | None, why: str
) -> None:
    err = check_epoch(it, rec, epoch, ALICE)
    assert isinstance(err, StaleToken)
    assert (err.token, err.current_token, err.holder, err.key) == (epoch, current, it.assignee, KEY)
    assert why in err.detail
    for d in (
        decide_progress(it, rec, ALICE, epoch, {"message": "m"}, NOW),
        decide_complete(it, rec, ALICE, epoch, "r", NOW),
    ):
        assert isinstance(refused(d), StaleToken) and d.item is None and d.lease.record is None


@pytest.mark.parametrize(
    "rec",
    [lease(), lease(expires_at=NOW - 1), lease(expires_at=NOW - 1, ended="expired")],
    ids=["live", "lapsed", "recorded"],
)
def test_the_current_epoch_passes_the_fence_whatever_the_clock_says(rec: KeyRecord) -> None:
    assert check_epoch(claimed(), rec, 3, ALICE) is None
    report = {"message": "half", "percent": 50}
    d = decide_progress(claimed(), rec, ALICE, 3, report, NOW)
    assert d.item == claimed(
        progress={"message": "half", "percent": 50, "by": "alice", "at": NOW},
        progress_at=NOW,
        updated_at=NOW,
    )
    assert d.lease.record is None and d.transfers == ()
    assert [(e.type, e.token, e.actor, e.data) for e in d.events] == [
        ("progress", 3, "alice", {"item": "job", "message": "half", "percent": 50})
    ]


@pytest.mark.parametrize("who", [BOB, ADMIN], ids=["stranger", "admin"])
@pytest.mark.parametrize(
    "rec", [lease(session="s1"), lease(expires_at=NOW - 1)], ids=["live", "lapsed"]
)
def test_the_current_epoch_from_anyone_but_its_holder_is_not_holder(
    who: Principal, rec: KeyRecord
) -> None:
    err = check_epoch(claimed(), rec, 3, who)
    assert isinstance(err, NotHolder)
    assert (err.holder, err.session, err.key) == ("alice", rec.session, KEY)
    for d in (
        decide_progress(claimed(), rec, who, 3, {"message": "m"}, NOW),
        decide_complete(claimed(), rec, who, 3, "r", NOW),
    ):
        assert isinstance(refused(d), NotHolder) and d.item is None and d.lease.record is None
        assert d.events == () and d.transfers == ()


def test_an_older_epoch_is_stale_whoever_sends_it() -> None:
    for who in (ALICE, BOB, ADMIN):
        assert isinstance(check_epoch(claimed(epoch=4), lease(token=4), 3, who), StaleToken)


def test_a_closed_item_passes_no_fence() -> None:
    err = check_epoch(claimed(status="done"), lease(ended="released"), 3, ALICE)
    assert isinstance(err, Conflict) and err.field == "status"


def test_completing_ends_the_live_lease_as_released() -> None:
    d = decide_complete(claimed(), lease(), ALICE, 3, {"ok": True}, NOW)
    assert d.lease.record == lease(ended="released")
    assert d.lease.events == (
        EventDraft("released", KEY, "alice", "run-1", 3, "alice", "completed", HELD),
    )
    done = claimed(status="done", assignee=None, result={"ok": True}, updated_at=NOW)
    assert d.item == done and d.raise_or_result() == done
    assert d.transfers == (Transfer("job", "alice", None, 3, "completed", "alice", NOW),)
    assert [(e.type, e.holder) for e in d.events] == [("completed", "alice")]


def test_completing_after_the_lapse_records_the_expiry_as_the_ending() -> None:
    d = decide_complete(claimed(), lease(expires_at=NOW), ALICE, 3, None, NOW)
    assert d.lease.record == lease(expires_at=NOW, ended="expired")
    assert [e.type for e in d.lease.events] == ["expired"]
    d = decide_complete(claimed(), lease(ended="released"), ALICE, 3, None, NOW)
    assert d.lease.record == lease(ended="released") and d.lease.events == ()


# cancel -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("who", "ending"), [(ALICE, "released"), (ADMIN, "force_released")], ids=["holder", "other"]
)
def test_cancel_ends_a_live_claim_and_closes_the_fence(who: Principal, ending: str) -> None:
    d = decide_cancel(claimed(), lease(), who, "not needed", True, NOW)
    assert d.lease.record == lease(ended=ending, fence_open=False)
    assert d.lease.events == (
        EventDraft(ending, KEY, "alice", "run-1", 3, who.name, "not needed", HELD),
    )
    cancelled = claimed(status="cancelled", assignee=None, updated_at=NOW)
    assert d.item == cancelled and d.raise_or_result() == cancelled
    assert d.transfers == (
        Transfer("job", "alice", None, 3, "cancelled", who.name, NOW, "not needed"),
    )
    assert [(e.type, e.reason, e.holder) for e in d.events] == [
        ("cancelled", "not needed", "alice")
    ]


def test_cancel_of_a_lapsed_or_unclaimed_item() -> None:
    d = decide_cancel(claimed(), lease(expires_at=NOW), ALICE, "r", True, NOW)
    assert d.lease.record == lease(expires_at=NOW, ended="expired", fence_open=False)
    assert [e.type for e in d.lease.events] == ["expired"]
    d = decide_cancel(item(), None, ALICE, "r", True, NOW)
    assert d.lease.record is None and d.lease.events == ()
    assert d.item is not None and d.item.status == "cancelled"
    assert d.transfers == (Transfer("job", None, None, 0, "cancelled", "alice", NOW, "r"),)


def test_cancel_refusals() -> None:
    d = decide_cancel(claimed(), lease(), BOB, "mine?", False, NOW)
    err = refused(d)
    assert isinstance(err, Forbidden) and (err.actor, err.reason) == ("bob", "mine?")
    assert d.lease.record is None and d.item is None
    d = decide_cancel(item(status="cancelled"), None, ADMIN, "again", True, NOW)
    assert isinstance(refused(d), Conflict)


# lease_state and the models ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("it", "rec", "state"),
    [
        (item(), None, "none"),
        (claimed(), None, "none"),
        (claimed(epoch=2), lease(token=3), "none"),  # the key's lease is not the item's claim
        (claimed(), lease(), "live"),
        (claimed(), lease(acquired_at=NOW - STALL), "live"),  # exactly the threshold
        (claimed(), lease(acquired_at=NOW - STALL - 1), "stalled"),
        (claimed(progress_at=NOW - 5), lease(acquired_at=NOW - STALL - 1), "live"),
        (claimed(progress_at=NOW - STALL - 1), lease(acquired_at=NOW - STALL - 9), "stalled"),
        # progress from before this acquisition (an earlier holder's) does not count
        (claimed(progress_at=NOW - 10 * STALL), lease(acquired_at=NOW - 5), "live"),
        (claimed(), lease(expires_at=NOW), "lapsed"),
        (claimed(), lease(ended="force_released"), "lapsed"),
        (claimed(), lease(ended="released"), "lapsed"),
        (claimed(assignee=None, status="open"), lease(ended="released"), "none"),
    ],
)
def test_lease_state(it: Item, rec: KeyRecord | None, state: str) -> None:
    assert lease_state(it, rec, NOW, STALL) == state


def test_models_render_as_dicts() -> None:
    assert item_key("a.b") == "items/a.b"
    it = claimed(labels=("x", "y"))
    out = it.to_dict()
    assert out["labels"] == ["x", "y"] and out["assignee"] == "alice" and out["epoch"] == 3
    transfer = Transfer("job", None, "bob", 1, "claimed", "bob", NOW)
    assert transfer.to_dict() == {
        "item": "job",
        "from": None,
        "to": "bob",
        "epoch": 1,
        "reason": "claimed",
        "actor": "bob",
        "at": NOW,
        "note": None,
        "exit_status": None,
    }
    view = ItemView(it, lease().lease(NOW), "live", (transfer,))
    assert view.to_dict() == {
        "item": out,
        "lease": lease().lease(NOW).to_dict(),
        "lease_state": "live",
        "state": {
            "word": "live",
            "at": None,
            "by": None,
            "reason": None,
            "to": None,
            "since": None,
        },
        "transfers": [transfer.to_dict()],
    }
    assert ItemView(item(), None, "none").to_dict()["lease"] is None
