"""The pure decision functions of :mod:`tenure.core.decide`: no store, no clock, no I/O.

Each test checks the three outputs a :class:`Decision` carries: the record to save (``None``
when nothing changed), the events to append, and the result or the error raised after commit.
"""

from __future__ import annotations

import pytest

from tenure.core.decide import (
    Decision,
    decide_acquire,
    decide_extend,
    decide_force_release,
    decide_release,
    decide_renew,
    decide_write,
    ending_event,
    may_force_release,
    settle,
)
from tenure.core.models import (
    EventDraft,
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    KeyRecord,
    Lease,
    Principal,
    ReleaseResult,
)
from tenure.errors import (
    Forbidden,
    IdempotencyConflict,
    LeaseHeld,
    LeaseLost,
    NotFound,
    NotHolder,
    StaleToken,
)

NOW = 1_700_000_000_000
ALICE = Principal("alice")
BOB = Principal("bob")
ADMIN = Principal("root", roles=("admin",))
SUPERVISOR = Principal("sup", roles=("supervisor",))
DAY = 24 * 3_600_000


def held(
    holder: str = "alice",
    *,
    token: int = 3,
    expires_at: int = NOW + 10_000,
    key: str = "k",
    **changes: object,
) -> KeyRecord:
    """A record of a lease on ``key`` acquired 20 s ago, live until ``expires_at``."""
    base = KeyRecord(
        key=key,
        token=token,
        holder=holder,
        task="job-1",
        ttl_ms=30_000,
        acquired_at=NOW - 20_000,
        renewed_at=NOW - 20_000,
        expires_at=expires_at,
        renewals=0,
        meta={"m": 1},
    )
    return base.update(**changes)


def expired_event(rec: KeyRecord) -> EventDraft:
    data = {"held_ms": max(0, rec.expires_at - rec.acquired_at), "deadline": rec.expires_at}
    return EventDraft("expired", rec.key, rec.holder, rec.task, rec.token, data=data)


# settle and Decision ----------------------------------------------------------------------------
def test_settle_records_a_lapsed_lease_once() -> None:
    rec = held(expires_at=NOW)  # a deadline equal to now has passed
    done, events = settle(rec, NOW)
    assert done == rec.update(ended="expired")
    assert events == (expired_event(rec),)
    again, more = settle(done, NOW + 1)
    assert again is done and more == ()


@pytest.mark.parametrize(
    "rec",
    [None, held(expires_at=NOW + 1), held(expires_at=NOW - 1, ended="released")],
    ids=["none", "live", "ended"],
)
def test_settle_leaves_live_missing_and_ended_records_alone(rec: KeyRecord | None) -> None:
    done, events = settle(rec, NOW)
    assert done is rec and events == ()


def test_decision_raises_its_error_or_returns_its_result() -> None:
    assert Decision(None, (), result=42).raise_or_result() == 42
    err = NotFound("gone", key="k", what="lease")
    with pytest.raises(NotFound) as info:
        Decision(None, (), result=42, error=err).raise_or_result()
    assert info.value is err


# acquire ----------------------------------------------------------------------------------------
def test_acquire_a_free_key_issues_token_one() -> None:
    d = decide_acquire(None, "k", ALICE, 5_000, "job-9", {"a": [1]}, NOW)
    assert d.error is None
    assert d.record == KeyRecord(
        key="k",
        token=1,
        holder="alice",
        task="job-9",
        ttl_ms=5_000,
        acquired_at=NOW,
        renewed_at=NOW,
        expires_at=NOW + 5_000,
        renewals=0,
        meta={"a": [1]},
    )
    assert d.record.ended is None and d.record.fence_open and d.record.conflicts == 0
    assert d.events == (
        EventDraft("acquired", "k", "alice", "job-9", 1, actor="alice", data={"ttl_ms": 5_000}),
    )
    assert d.result == Lease("k", "alice", "job-9", 1, 5_000, NOW, NOW, NOW + 5_000, 0, {"a": [1]})
    assert d.result.state == "live"


def test_acquire_without_meta_stores_an_empty_object() -> None:
    d = decide_acquire(None, "k", ALICE, 5_000, None, None, NOW)
    assert d.record is not None and d.record.meta == {} and d.record.task is None


def test_reacquiring_your_own_live_lease_renews_it_and_keeps_the_token() -> None:
    rec = held()
    d = decide_acquire(rec, "k", ALICE, 15_000, None, None, NOW)
    assert d.error is None and d.events == ()
    assert d.record == rec.update(
        renewed_at=NOW, ttl_ms=15_000, renewals=1, expires_at=NOW + 15_000
    )
    assert d.result.token == 3 and d.result.task == "job-1" and d.result.meta == {"m": 1}


def test_reacquiring_replaces_task_and_meta_when_given() -> None:
    d = decide_acquire(held(), "k", ALICE, 15_000, "job-2", {"n": 2}, NOW)
    assert d.record is not None
    assert (d.record.task, d.record.meta, d.record.token) == ("job-2", {"n": 2}, 3)


def test_reacquiring_never_shortens_an_extended_lease() -> None:
    rec = held(expires_at=NOW + DAY)
    d = decide_acquire(rec, "k", ALICE, 1_000, None, None, NOW)
    assert d.record is not None and d.record.expires_at == NOW + DAY
    assert d.record.renewals == 1


def test_acquiring_a_key_held_by_someone_else_is_refused_and_counted() -> None:
    rec = held(conflicts=4)
    d = decide_acquire(rec, "k", BOB, 5_000, "bob-job", None, NOW)
    assert d.result is None
    assert d.record == rec.update(conflicts=5)
    assert d.events == (
        EventDraft(
            "conflict", "k", "alice", "job-1", 3, actor="bob", data={"wanted_task": "bob-job"}
        ),
    )
    assert isinstance(d.error, LeaseHeld)
    assert d.error.info() == {
        "key": "k",
        "holder": "alice",
        "session": "",
        "task": "job-1",
        "expires_at": NOW + 10_000,
        "token": 3,
        "held_key": "k",
        "scope": "key",
    }


@pytest.mark.parametrize("lapse", [0, 1, 60_000], ids=["at-deadline", "just-after", "long-after"])
def test_acquiring_a_lapsed_lease_records_its_expiry_and_issues_the_next_token(
    lapse: int,
) -> None:
    rec = held(expires_at=NOW - lapse, conflicts=2)
    d = decide_acquire(rec, "k", BOB, 5_000, None, None, NOW)
    assert d.error is None
    assert d.record is not None
    assert (d.record.token, d.record.holder, d.record.expires_at) == (4, "bob", NOW + 5_000)
    assert (d.record.ended, d.record.fence_open, d.record.renewals) == (None, True, 0)
    assert d.record.conflicts == 2  # the key's bookkeeping outlives the lease
    assert d.record.meta == {} and d.record.task is None
    assert [e.type for e in d.events] == ["expired", "acquired"]
    assert d.events[0] == expired_event(rec)
    assert d.events[1].token == 4


def test_the_holder_of_a_lapsed_lease_gets_a_new_token_too() -> None:
    d = decide_acquire(held(expires_at=NOW - 1), "k", ALICE, 5_000, None, None, NOW)
    assert d.record is not None and d.record.token == 4
    assert [e.type for e in d.events] == ["expired", "acquired"]


@pytest.mark.parametrize("ended", ["released", "force_released", "expired", "taken_over"])
def test_acquiring_after_a_recorded_end_adds_no_second_ending(ended: str) -> None:
    rec = held(ended=ended, fence_open=ended != "force_released")
    d = decide_acquire(rec, "k", BOB, 5_000, None, None, NOW)
    assert d.error is None and d.record is not None
    assert (d.record.token, d.record.ended, d.record.fence_open) == (4, None, True)
    assert [e.type for e in d.events] == ["acquired"]


# renew ------------------------------------------------------------------------------------------
def test_renew_extends_by_the_lease_ttl_and_counts() -> None:
    rec = held(renewals=2)
    d = decide_renew(rec, "k", ALICE, 3, None, NOW)
    assert d.error is None and d.events == ()
    assert d.record == rec.update(renewed_at=NOW, renewals=3, expires_at=NOW + 30_000)
    assert d.result == d.record.lease(NOW)


def test_renew_with_a_ttl_sets_the_new_term() -> None:
    d = decide_renew(held(), "k", ALICE, 3, 20_000, NOW)
    assert d.record is not None
    assert (d.record.ttl_ms, d.record.expires_at) == (20_000, NOW + 20_000)


def test_renew_after_an_extend_keeps_the_later_deadline() -> None:
    d = decide_renew(held(expires_at=NOW + DAY), "k", ALICE, 3, 1_000, NOW)
    assert d.record is not None and d.record.expires_at == NOW + DAY


def test_renew_of_a_key_never_leased_is_not_found() -> None:
    d = decide_renew(None, "k", ALICE, 1, None, NOW)
    assert (d.record, d.events, d.result) == (None, (), None)
    assert isinstance(d.error, NotFound) and d.error.info() == {"key": "k", "what": "lease"}


def test_renew_with_a_token_never_issued_is_stale() -> None:
    d = decide_renew(held(), "k", ALICE, 4, None, NOW)
    assert d.record is None
    assert isinstance(d.error, StaleToken)
    assert (d.error.token, d.error.current_token) == (4, 3)


def test_renew_with_an_older_token_is_lost_for_the_service_to_explain() -> None:
    d = decide_renew(held(), "k", ALICE, 2, None, NOW)
    assert d.record is None
    assert isinstance(d.error, LeaseLost)
    assert (d.error.reason, d.error.token) == (None, 2)


def test_renewing_someone_elses_live_lease_names_the_holder() -> None:
    d = decide_renew(held(), "k", BOB, 3, None, NOW)
    assert d.record is None and d.events == ()
    assert isinstance(d.error, NotHolder)
    assert d.error.info() == {
        "key": "k",
        "holder": "alice",
        "session": "",
        "task": "job-1",
        "expires_at": NOW + 10_000,
    }


def test_renewing_a_lapsed_lease_records_the_expiry_and_fails() -> None:
    rec = held(expires_at=NOW)
    d = decide_renew(rec, "k", ALICE, 3, None, NOW)
    assert d.record == rec.update(ended="expired")
    assert d.events == (expired_event(rec),)
    assert isinstance(d.error, LeaseLost)
    assert (d.error.reason, d.error.token) == ("expired", 3)


@pytest.mark.parametrize("ended", ["released", "force_released", "expired", "taken_over"])
def test_renewing_an_ended_lease_fails_with_how_it_ended(ended: str) -> None:
    d = decide_renew(held(ended=ended), "k", ALICE, 3, None, NOW)
    assert d.record is None and d.events == ()
    assert isinstance(d.error, LeaseLost) and d.error.reason == ended


# extend -----------------------------------------------------------------------------------------
def test_extend_moves_the_deadline_and_records_it() -> None:
    rec = held()
    d = decide_extend(rec, "k", ALICE, 3, NOW + 3_600_000, DAY, NOW)
    assert d.error is None
    assert d.record == rec.update(expires_at=NOW + 3_600_000)
    assert d.record.renewals == rec.renewals and d.record.renewed_at == rec.renewed_at
    assert d.events == (
        EventDraft(
            "extended",
            "k",
            "alice",
            "job-1",
            3,
            actor="alice",
            data={
                "requested_until": NOW + 3_600_000,
                "granted_until": NOW + 3_600_000,
                "capped": False,
            },
        ),
    )
    assert d.result == ExtendResult(
        d.record.lease(NOW), True, False, NOW + 3_600_000, NOW + 3_600_000
    )


def test_extend_past_the_maximum_is_capped_and_says_so() -> None:
    d = decide_extend(held(), "k", ALICE, 3, NOW + 2 * DAY, DAY, NOW)
    assert d.record is not None and d.record.expires_at == NOW + DAY
    assert d.result == ExtendResult(d.record.lease(NOW), True, True, NOW + 2 * DAY, NOW + DAY)
    assert d.events[0].data == {
        "requested_until": NOW + 2 * DAY,
        "granted_until": NOW + DAY,
        "capped": True,
    }


@pytest.mark.parametrize("until", [NOW + 5_000, NOW + 10_000, NOW, 0], ids=repr)
def test_extend_earlier_than_the_deadline_changes_nothing(until: int) -> None:
    rec = held(expires_at=NOW + 10_000)
    d = decide_extend(rec, "k", ALICE, 3, until, DAY, NOW)
    assert (d.record, d.events, d.error) == (None, (), None)
    assert d.result == ExtendResult(rec.lease(NOW), False, False, until, NOW + 10_000)


def test_a_capped_extend_below_the_deadline_changes_nothing_and_says_capped() -> None:
    rec = held(expires_at=NOW + 2 * DAY)  # e.g. the policy's max_lease was lowered since
    d = decide_extend(rec, "k", ALICE, 3, NOW + 3 * DAY, DAY, NOW)
    assert (d.record, d.events) == (None, ())
    assert d.result == ExtendResult(rec.lease(NOW), False, True, NOW + 3 * DAY, NOW + 2 * DAY)


def test_extend_checks_the_holder_and_token_like_renew() -> None:
    assert isinstance(decide_extend(None, "k", ALICE, 1, NOW + 1, DAY, NOW).error, NotFound)
    assert isinstance(decide_extend(held(), "k", BOB, 3, NOW + 1, DAY, NOW).error, NotHolder)
    assert isinstance(decide_extend(held(), "k", ALICE, 9, NOW + 1, DAY, NOW).error, StaleToken)
    old = decide_extend(held(), "k", ALICE, 1, NOW + DAY, DAY, NOW)
    assert isinstance(old.error, LeaseLost) and old.record is None


def test_extending_a_lapsed_lease_records_the_expiry_and_fails() -> None:
    rec = held(expires_at=NOW - 1)
    d = decide_extend(rec, "k", ALICE, 3, NOW + DAY, DAY, NOW)
    assert d.record == rec.update(ended="expired")
    assert d.events == (expired_event(rec),)
    assert isinstance(d.error, LeaseLost) and d.error.reason == "expired"
    assert d.result is None


# release ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", [None, 3], ids=["no-token", "current-token"])
def test_release_your_live_lease(token: int | None) -> None:
    rec = held()
    d = decide_release(rec, "k", ALICE, token, NOW)
    assert d.error is None
    assert d.record == rec.update(ended="released")
    assert d.record.fence_open  # a release leaves the fence open until the next acquisition
    ms = {"held_ms": 20_000}
    assert d.events == (EventDraft("released", "k", "alice", "job-1", 3, "alice", data=ms),)
    assert d.result == ReleaseResult(True, d.record.lease(NOW))
    assert d.result.lease is not None and d.result.lease.state == "released"


def test_release_of_a_key_never_leased_says_false() -> None:
    d = decide_release(None, "k", ALICE, None, NOW)
    assert d == Decision(None, (), ReleaseResult(False, None, "no_lease"))


@pytest.mark.parametrize("token", [1, 2, 4])
def test_release_with_another_token_of_your_key_says_false(token: int) -> None:
    rec = held()
    d = decide_release(rec, "k", ALICE, token, NOW)
    assert (d.record, d.events, d.error) == (None, (), None)
    assert d.result == ReleaseResult(False, rec.lease(NOW), "stale_token")


def test_releasing_someone_elses_live_lease_is_refused() -> None:
    d = decide_release(held(), "k", BOB, None, NOW)
    assert (d.record, d.events, d.result) == (None, (), None)
    assert isinstance(d.error, NotHolder) and d.error.holder == "alice"


def test_releasing_a_lapsed_lease_records_the_expiry_and_says_false() -> None:
    rec = held(expires_at=NOW)
    for who in (ALICE, BOB):
        d = decide_release(rec, "k", who, None, NOW)
        assert d.error is None
        assert d.record == rec.update(ended="expired")
        assert d.events == (expired_event(rec),)
        assert d.result == ReleaseResult(False, rec.update(ended="expired").lease(NOW), "ended")


def test_releasing_twice_says_false_and_changes_nothing() -> None:
    first = decide_release(held(), "k", ALICE, 3, NOW)
    assert first.record is not None
    second = decide_release(first.record, "k", ALICE, 3, NOW)
    assert (second.record, second.events, second.error) == (None, (), None)
    assert second.result == ReleaseResult(False, first.record.lease(NOW), "ended")


# force-release ----------------------------------------------------------------------------------
def test_may_force_release_rules() -> None:
    plain, admin_holder = Principal("w"), Principal("boss", roles=("admin",))
    assert may_force_release(ADMIN, admin_holder, ())
    assert may_force_release(ADMIN, None, ())
    assert may_force_release(SUPERVISOR, plain, ())
    assert may_force_release(SUPERVISOR, None, ())
    assert not may_force_release(SUPERVISOR, admin_holder, ())
    assert may_force_release(SUPERVISOR, admin_holder, ("sup",))  # an ancestor all the same
    assert may_force_release(ALICE, plain, ("parent", "alice"))
    assert not may_force_release(ALICE, plain, ("parent",))
    assert not may_force_release(BOB, None, ())


def test_force_release_ends_the_lease_and_revokes_its_token() -> None:
    rec = held()
    d = decide_force_release(rec, "k", ADMIN, "stuck", True, NOW)
    assert d.error is None
    assert d.record == rec.update(ended="force_released", fence_open=False)
    assert d.events == (
        EventDraft(
            "force_released", "k", "alice", "job-1", 3, "root", "stuck", {"held_ms": 20_000}
        ),
    )
    assert d.result == ForceReleaseResult(d.record.lease(NOW), "root", "stuck")
    assert d.result.lease.state == "force_released"


def test_force_release_without_authority_is_forbidden() -> None:
    d = decide_force_release(held(), "k", BOB, "mine now", False, NOW)
    assert (d.record, d.events, d.result) == (None, (), None)
    assert isinstance(d.error, Forbidden)
    assert d.error.info() == {"key": "k", "actor": "bob", "reason": "mine now"}


def test_force_release_of_a_key_never_leased_is_not_found() -> None:
    d = decide_force_release(None, "k", ADMIN, "x", True, NOW)
    assert (d.record, d.events) == (None, ())
    assert isinstance(d.error, NotFound) and d.error.what == "live lease"


def test_force_release_of_a_lapsed_lease_records_the_expiry_and_is_not_found() -> None:
    rec = held(expires_at=NOW)
    d = decide_force_release(rec, "k", ADMIN, "x", True, NOW)
    assert d.record == rec.update(ended="expired")  # and the fence stays open
    assert d.events == (expired_event(rec),)
    assert isinstance(d.error, NotFound)


def test_force_release_of_a_released_lease_is_not_found() -> None:
    d = decide_force_release(held(ended="released"), "k", ADMIN, "x", True, NOW)
    assert (d.record, d.events) == (None, ())
    assert isinstance(d.error, NotFound)


# fenced writes ----------------------------------------------------------------------------------
def test_write_with_the_current_token_is_accepted_and_versioned() -> None:
    reg = FencedValue("k", 2, "old", 7, NOW - 5)
    d = decide_write(held(), reg, None, "k", ALICE, 3, {"v": 1}, NOW)
    assert d.error is None and d.record is None
    assert d.result == FencedWrite("k", 3, {"v": 1}, 8, duplicate=False)
    assert d.events == (
        EventDraft("written", "k", "alice", "job-1", 3, actor="alice", data={"version": 8}),
    )


def test_the_first_write_is_version_one() -> None:
    d = decide_write(held(), None, None, "k", ALICE, 3, "v", NOW)
    assert d.result == FencedWrite("k", 3, "v", 1)


def test_a_duplicate_op_returns_the_first_result_and_changes_nothing() -> None:
    first = FencedWrite("k", 2, "first", 4, duplicate=True, writer="alice")
    # Even with a stale token and a lapsed lease, nothing is decided again.
    d = decide_write(held(expires_at=NOW - 1), None, first, "k", ALICE, 2, "first", NOW, "op")
    assert d == Decision(None, (), first)


def test_an_op_id_repeated_with_another_value_is_an_idempotency_conflict() -> None:
    first = FencedWrite("k", 3, {"rows": 1}, 4, duplicate=True, writer="alice")
    for value in ({"rows": 2}, {"rows": True}, None):
        d = decide_write(held(), None, first, "k", ALICE, 3, value, NOW, "nightly")
        assert (d.record, d.events, d.result) == (None, (), None)
        assert isinstance(d.error, IdempotencyConflict)
        assert d.error.info() == {"key": "k", "op_id": "nightly", "token": 3, "version": 4}
    # key order is not a different value
    first = FencedWrite("k", 3, {"a": 1, "b": 2}, 4, duplicate=True, writer="alice")
    d = decide_write(held(), None, first, "k", ALICE, 3, {"b": 2, "a": 1}, NOW, "nightly")
    assert d.error is None and d.result == first


def test_an_op_id_repeated_by_someone_else_is_not_holder() -> None:
    first = FencedWrite("k", 3, "v", 4, duplicate=True, writer="alice")
    d = decide_write(held(), None, first, "k", BOB, 3, "v", NOW, "op")
    assert isinstance(d.error, NotHolder) and d.error.holder == "alice"
    assert (d.record, d.events, d.result) == (None, (), None)


@pytest.mark.parametrize("token", [1, 2, 4, 99])
def test_write_with_any_other_token_is_stale(token: int) -> None:
    d = decide_write(held(), None, None, "k", ALICE, token, "v", NOW)
    assert (d.record, d.events, d.result) == (None, (), None)
    assert isinstance(d.error, StaleToken)
    assert d.error.info() == {"key": "k", "token": token, "current_token": 3}
    assert "stale" in d.error.detail


def test_write_to_a_key_never_leased_is_stale_without_a_current_token() -> None:
    d = decide_write(None, None, None, "k", ALICE, 1, "v", NOW)
    assert isinstance(d.error, StaleToken)
    assert (d.error.token, d.error.current_token) == (1, None)


def test_write_with_a_revoked_token_is_stale() -> None:
    rec = held(ended="force_released", fence_open=False)
    d = decide_write(rec, None, None, "k", ALICE, 3, "v", NOW)
    assert isinstance(d.error, StaleToken)
    assert (d.error.token, d.error.current_token) == (3, 3)
    assert "revoked" in d.error.detail


def test_write_with_the_current_token_of_a_lapsed_lease_is_accepted() -> None:
    rec = held(expires_at=NOW - 60_000)
    d = decide_write(rec, None, None, "k", ALICE, 3, "late", NOW)
    assert d.error is None
    assert d.result == FencedWrite("k", 3, "late", 1)
    assert d.record == rec.update(ended="expired")
    assert [e.type for e in d.events] == ["expired", "written"]


@pytest.mark.parametrize("ended", ["released", "expired"])
def test_write_with_the_current_token_of_an_ended_lease_is_accepted(ended: str) -> None:
    d = decide_write(held(ended=ended), None, None, "k", ALICE, 3, "v", NOW)
    assert d.error is None and d.record is None
    assert d.result == FencedWrite("k", 3, "v", 1)
    assert d.events[0].actor == "alice" and d.events[0].holder == "alice"


@pytest.mark.parametrize("ended", [None, "released", "expired"])
@pytest.mark.parametrize("who", [BOB, Principal("root", roles=("admin",))], ids=["bob", "admin"])
def test_write_with_the_current_token_by_anyone_but_its_holder_is_not_holder(
    ended: str | None, who: Principal
) -> None:
    d = decide_write(held(ended=ended), None, None, "k", who, 3, "v", NOW)
    assert (d.record, d.events, d.result) == (None, (), None)
    assert isinstance(d.error, NotHolder) and d.error.holder == "alice"


def test_write_with_an_older_token_is_stale_whoever_sends_it() -> None:
    for who in (ALICE, BOB):
        d = decide_write(held(), None, None, "k", who, 2, "v", NOW)
        assert isinstance(d.error, StaleToken)


# sessions ---------------------------------------------------------------------------------------
def test_another_session_of_the_holder_is_refused_and_changes_nothing() -> None:
    rec = held(session="web-1", conflicts=1)
    d = decide_acquire(rec, "k", ALICE, 99_000, "relabel", {"x": 1}, NOW, "web-2")
    assert d.result is None
    # nothing relabelled, no new ttl or deadline: only the conflict is counted
    assert d.record == rec.update(conflicts=2)
    assert isinstance(d.error, LeaseHeld)
    assert (d.error.holder, d.error.session, d.error.task) == ("alice", "web-1", "job-1")
    assert d.error.expires_at == rec.expires_at and "session 'web-1'" in d.error.detail
    assert [(e.type, e.actor, e.data) for e in d.events] == [
        ("conflict", "alice", {"wanted_task": "relabel", "wanted_session": "web-2"})
    ]


def test_the_same_session_renews_with_the_same_token() -> None:
    rec = held(session="web-1")
    d = decide_acquire(rec, "k", ALICE, 20_000, None, None, NOW, "web-1")
    assert d.error is None and d.result.token == rec.token and d.result.session == "web-1"
    # the default session is a session like any other
    d = decide_acquire(held(), "k", ALICE, 20_000, None, None, NOW, "web-1")
    assert isinstance(d.error, LeaseHeld) and d.error.session == ""


def test_a_grant_records_its_session() -> None:
    d = decide_acquire(None, "k", ALICE, 5_000, None, None, NOW, "cron-7")
    assert d.record is not None and d.record.session == "cron-7"
    assert d.result.session == "cron-7" and d.result.to_dict()["session"] == "cron-7"
    assert d.events[-1].data == {"ttl_ms": 5_000, "session": "cron-7"}
    ended = ending_event(d.record, "released", NOW + 1)
    assert ended.data["session"] == "cron-7"


def test_a_token_proves_the_lease_for_any_session_of_its_holder() -> None:
    rec = held(session="web-1")
    assert decide_renew(rec, "k", ALICE, 3, None, NOW).error is None
    released = decide_release(rec, "k", ALICE, 3, NOW, "web-2")
    assert released.error is None and released.result.released


def test_a_release_without_a_token_is_only_for_the_same_session() -> None:
    rec = held(session="web-1")
    d = decide_release(rec, "k", ALICE, None, NOW, "web-2")
    assert isinstance(d.error, NotHolder) and d.error.session == "web-1"
    assert d.record is None and d.events == ()
    d = decide_release(rec, "k", ALICE, None, NOW, "web-1")
    assert d.error is None and d.result.released
