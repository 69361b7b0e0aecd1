"""The one function that decides the word for a claim's (or a lock lease's) state and the moment
that goes with it (:mod:`tenure.core.states`), and the words it is said in, each time in its
tense: every state, from the facts a store holds, at an instant of a :class:`FakeClock`."""

from __future__ import annotations

import pytest

from tenure.core.clock import FakeClock
from tenure.core.items import lease_state
from tenure.core.models import KeyRecord, Lease
from tenure.core.states import WORDS, State, claim_state, lease_word, say
from tenure.core.work import Item, ItemView, Transfer

CLOCK = FakeClock()
NOW = CLOCK.now_ms()
STALL = 60_000
S, M = 1000, 60_000


def item(**changes: object) -> Item:
    """``job``, claimed by alice at epoch 3."""
    base = Item("job", "write the report", status="in_progress", assignee="alice", epoch=3)
    return base.update(**changes)


def rec(**changes: object) -> KeyRecord:
    """alice's claim on ``items/job`` (epoch 3), taken 20 s ago, live for 27 s more."""
    base = KeyRecord(
        "items/job", 3, "alice", None, 47 * S, NOW - 20 * S, NOW - 20 * S, NOW + 27 * S
    )
    return base.update(**changes)


def moved(reason: str, to: str | None = "alice", at: int = NOW - 2 * M, note: str | None = None):
    return Transfer("job", "alice", to, 3, reason, "root", at, note)


def test_live_expires_ahead() -> None:
    state = claim_state(item(), rec(), NOW, STALL)
    assert state == State("live", NOW + 27 * S)
    assert say(state, NOW) == "live, expires in 27s"


def test_stalled_counts_from_the_last_progress_or_the_claim() -> None:
    quiet = rec(acquired_at=NOW - 6 * M)
    state = claim_state(item(), quiet, NOW, STALL)
    assert state == State("stalled", NOW + 27 * S, since=NOW - 6 * M)
    assert say(state, NOW) == "stalled: no progress for 6m, expires in 27s"
    # progress 30 s ago: live again; progress before this claim (an earlier holder's) does not count
    assert claim_state(item(progress_at=NOW - 30 * S), quiet, NOW, STALL).word == "live"
    assert claim_state(item(progress_at=NOW - 9 * M), quiet, NOW, STALL).word == "stalled"


def test_lapsed_is_in_the_past() -> None:
    """The holder let it run out (recorded or not yet): lapsed, at the deadline, in the past."""
    for ended in (None, "expired"):
        gone = rec(expires_at=NOW - 27 * S, ended=ended)
        state = claim_state(item(), gone, NOW, STALL)
        assert state == State("lapsed", NOW - 27 * S)
        assert say(state, NOW) == "lapsed 27s ago"
    # a lease ended early that left the item its holder's (not revoked): lapsed, never "in 27s"
    for ended in ("released", "force_released"):
        state = claim_state(item(), rec(ended=ended), NOW, STALL)
        assert state == State("lapsed") and say(state, NOW) == "lapsed"


def test_revoked_says_when_by_whom_and_why() -> None:
    """Force-released: the deadline still ahead means nothing; the force-release's moment."""
    ended = rec(ended="force_released", fence_open=False)
    last = moved("force_released", note="stuck on the migration")
    state = claim_state(item(revoked=True), ended, NOW, STALL, last)
    assert state == State("revoked", NOW - 2 * M, "root", "stuck on the migration")
    assert say(state, NOW) == "revoked 2m ago by root: stuck on the migration"
    # without the transfer (a list that did not read it) the word stays, with no moment
    assert say(claim_state(item(revoked=True), ended, NOW, STALL), NOW) == "revoked"
    # a transfer that is not the force-release does not lend its moment
    other = claim_state(item(revoked=True), ended, NOW, STALL, moved("claimed"))
    assert other == State("revoked")


def test_reassigned_is_not_lapsed() -> None:
    """The issue's case: alice's live claim, reassigned to bob, read "lapsed, in 27s" (lapsed
    yet in the future). It is reassigned, at the reassign, to bob."""
    ended = rec(ended="force_released", fence_open=False)
    now_bobs = item(status="open", assignee="bob")
    last = moved("reassigned", to="bob", at=NOW - 5 * S, note="rota")
    state = claim_state(now_bobs, ended, NOW, STALL, last)
    assert state == State("reassigned", NOW - 5 * S, "root", "rota", "bob")
    assert say(state, NOW) == "reassigned 5s ago to bob by root: rota"
    # without the transfer: still reassigned (the assignee is not the holder), to bob
    bare = claim_state(now_bobs, ended, NOW, STALL)
    assert bare == State("reassigned", to="bob") and say(bare, NOW) == "reassigned to bob"
    # a lapsed claim reassigned: reassigned too
    lapsed = rec(expires_at=NOW - M, ended="expired")
    assert claim_state(now_bobs, lapsed, NOW, STALL, last).word == "reassigned"
    # reassigned to its own holder: the transfer says so
    to_alice = moved("reassigned", to="alice", at=NOW - 5 * S)
    assert claim_state(item(status="open"), ended, NOW, STALL, to_alice).word == "reassigned"
    # a revoked claim reassigned is no longer revoked
    assert claim_state(now_bobs.update(revoked=False), ended, NOW, STALL, last).word == (
        "reassigned"
    )


def test_reassigned_then_claimed_is_live() -> None:
    bobs = item(assignee="bob", epoch=4)
    claim = rec(token=4, holder="bob")
    assert claim_state(bobs, claim, NOW, STALL, moved("claimed", to="bob")).word == "live"


def test_released_and_none() -> None:
    released = rec(ended="released")
    open_item = item(status="open", assignee=None)
    last = Transfer("job", "alice", None, 3, "released", "alice", NOW - 3 * S)
    state = claim_state(open_item, released, NOW, STALL, last)
    assert state == State("released", NOW - 3 * S, "alice")
    assert say(state, NOW) == "released 3s ago by alice"
    # never claimed, another epoch's record, closed: none
    assert claim_state(item(epoch=0, assignee=None), None, NOW, STALL) == State("none")
    assert claim_state(item(), rec(token=9), NOW, STALL).word == "none"
    assert claim_state(item(status="done", assignee=None), released, NOW, STALL).word == "none"
    assert claim_state(open_item, released, NOW, STALL).word == "none"  # not known released
    assert say(State("none"), NOW) == "none"


def test_time_moves_a_live_claim_to_lapsed() -> None:
    clock = FakeClock(NOW)
    claim = rec()
    assert say(claim_state(item(), claim, clock.now_ms(), STALL), clock.now_ms()) == (
        "live, expires in 27s"
    )
    clock.advance(27 * S)  # at the deadline it is gone
    assert say(claim_state(item(), claim, clock.now_ms(), STALL), clock.now_ms()) == (
        "lapsed just now"
    )
    clock.advance(2 * M)
    assert say(claim_state(item(), claim, clock.now_ms(), STALL), clock.now_ms()) == (
        "lapsed 2m ago"
    )


@pytest.mark.parametrize(
    ("state", "word", "said"),
    [
        ("live", "live", "live, expires in 27s"),
        ("expired", "expired", "expired 27s ago"),
        ("released", "released", "released"),
        ("force_released", "revoked", "revoked"),
        ("taken_over", "revoked", "revoked"),
    ],
)
def test_lock_lease_words(state: str, word: str, said: str) -> None:
    ahead = NOW + 27 * S if state == "live" else NOW - 27 * S
    taken = NOW - 3 * S
    lease = Lease("jobs/a", "jo", None, 7, 30 * S, taken, taken, ahead, 0, state=state)  # type: ignore[arg-type]
    found = lease_word(lease)
    assert found.word == word and say(found, NOW) == said


def test_every_word_is_decided_and_known() -> None:
    """The words the views may carry are exactly the ones the function decides."""
    assert set(WORDS) == {
        "live", "stalled", "lapsed", "released", "revoked", "reassigned", "expired", "none"
    }  # fmt: skip


def test_lease_state_is_the_functions_word() -> None:
    ended = rec(ended="force_released", fence_open=False)
    assert lease_state(item(status="open", assignee="bob"), ended, NOW, STALL) == "reassigned"
    assert lease_state(item(revoked=True), ended, NOW, STALL) == "revoked"


def test_view_carries_the_state_on_the_wire() -> None:
    state = State("reassigned", NOW - 5 * S, "root", "rota", "bob")
    view = ItemView(item(assignee="bob"), None, "reassigned", (), state)
    wire = view.to_dict()
    assert wire["lease_state"] == "reassigned" and wire["state"]["at"] == NOW - 5 * S
    assert ItemView.from_wire(wire) == view
    # a view made with the word alone carries that word, without a moment
    assert ItemView(item(), None, "lapsed").state == State("lapsed")
    old = {k: v for k, v in wire.items() if k != "state"}  # a server without the field
    assert ItemView.from_wire(old).state == State("reassigned")
