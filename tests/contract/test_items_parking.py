"""Attempts and parking, on both backends: each claim counts an attempt; a claim that lapses
(counted by the reaper) or whose command exits non-zero is a failed attempt; at the policy's
``max_attempts`` (per prefix; 0, the default: never) the item is ``parked`` for its assignee,
not ready and not claimable, until a person reopens it (attempts reset)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import Forbidden, PolicySet, Reaper, Service
from tenure.core.policy import Policy
from tenure.errors import Conflict, Parked

from ._items import AGENT, ALICE, BOB, CAROL, org, snapshot

TTL = 10_000


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    policy = PolicySet().with_prefix("items/jobs-", max_attempts=3)
    service = org(make_service, policy=policy)
    service.items.create(CAROL, "write the report", id="jobs-1")
    return service


def lapse(svc: Service, clock: tenure.FakeClock, who: tenure.Principal, item: str) -> int:
    """Claim ``item`` as ``who``, let it run out, and let the reaper see it; the epoch."""
    epoch = svc.items.claim(who, item, ttl_ms=TTL, takeover=True, reason="again").lease.token
    clock.advance(TTL + 1)
    Reaper(svc).run_once()
    return epoch


def test_each_claim_counts_an_attempt_and_a_renewal_does_not(svc: Service) -> None:
    svc.items.claim(ALICE, "jobs-1", ttl_ms=TTL)
    svc.items.claim(ALICE, "jobs-1", ttl_ms=TTL)  # the same session again: a renewal
    assert svc.items.get("jobs-1").item.attempts == 1
    epoch = svc.items.get("jobs-1").item.epoch
    svc.items.release(ALICE, "jobs-1", epoch)
    svc.items.claim(BOB, "jobs-1", ttl_ms=TTL)
    item = svc.items.get("jobs-1").item
    assert (item.attempts, item.failures) == (2, ())  # a plain release is no failure


def test_lapses_park_the_item_at_max_attempts(svc: Service, clock: tenure.FakeClock) -> None:
    first = lapse(svc, clock, ALICE, "jobs-1")
    item = svc.items.get("jobs-1").item
    assert (item.status, item.attempts, [f.reason for f in item.failures]) == (
        "in_progress",
        1,
        ["lapsed"],
    )
    assert item.failures[0].epoch == first
    Reaper(svc).run_once()  # seen again: counted once per claim
    assert len(svc.items.get("jobs-1").item.failures) == 1
    lapse(svc, clock, ALICE, "jobs-1")
    lapse(svc, clock, BOB, "jobs-1")
    view = svc.items.get("jobs-1")
    assert view.item.status == "parked" and view.item.assignee == "bob"
    assert view.item.parked_words() == "parked after 3 attempts: lapsed, lapsed, lapsed"
    assert view.lease_state == "none"
    parked = [e for e in svc.events(item="jobs-1") if e.type == "parked"]
    assert len(parked) == 1 and parked[0].data["attempts"] == 3


def test_a_parked_item_is_not_ready_nor_claimable(svc: Service, clock: tenure.FakeClock) -> None:
    for who in (ALICE, ALICE, ALICE):
        lapse(svc, clock, who, "jobs-1")
    assert svc.items.get("jobs-1").item.status == "parked"
    ready = svc.items.ready_view()
    assert "jobs-1" not in [i.id for i in ready.items]
    assert "jobs-1" not in [x.item.id for x in ready.lapsed]
    before = snapshot(svc, "jobs-1")
    for who in (ALICE, BOB):
        with pytest.raises(Parked) as err:
            svc.items.claim(who, "jobs-1", takeover=True, reason="mine now")
        assert err.value.attempts == 3 and "reopen" in str(err.value)
    with pytest.raises(Parked):
        svc.items.update(ALICE, "jobs-1", status="open")
    assert snapshot(svc, "jobs-1") == before
    queue = svc.items.queue("alice")
    assert [x.item.status for x in queue] == ["parked"]  # shown to its person
    assert [x.item.id for x in svc.items.briefing(ALICE).parked] == ["jobs-1"]


def test_command_exited_non_zero_counts_and_zero_does_not(svc: Service) -> None:
    for status in (0, 1, 2):
        epoch = svc.items.claim(ALICE, "jobs-1", ttl_ms=TTL).lease.token
        svc.items.release(ALICE, "jobs-1", epoch, reason="command_exited", exit_status=status)
    item = svc.items.get("jobs-1").item
    assert (item.status, item.attempts) == ("open", 3)
    assert [f.words() for f in item.failures] == [
        "command_exited (status 1)",
        "command_exited (status 2)",
    ]
    epoch = svc.items.claim(ALICE, "jobs-1", ttl_ms=TTL).lease.token
    out = svc.items.release(ALICE, "jobs-1", epoch, reason="command_exited", exit_status=137)
    assert out.item.status == "parked" and out.item.assignee == "alice"
    assert out.item.parked_words() == (
        "parked after 4 attempts: command_exited (status 1), command_exited (status 2), "
        "command_exited (status 137)"
    )
    assert svc.items.get("jobs-1").item == out.item


def test_force_release_is_no_failure(svc: Service, clock: tenure.FakeClock) -> None:
    from ._items import ADMIN

    svc.items.claim(ALICE, "jobs-1", ttl_ms=TTL)
    svc.items.force_release(ADMIN, "jobs-1", "stuck")
    clock.advance(TTL + 1)
    Reaper(svc).run_once()
    assert svc.items.get("jobs-1").item.failures == ()


def test_reopen_resets_and_is_recorded(svc: Service, clock: tenure.FakeClock) -> None:
    for _ in range(3):
        lapse(svc, clock, AGENT, "jobs-1")
    with pytest.raises(Forbidden):
        svc.items.reopen(BOB, "jobs-1", "not mine")
    reopened = svc.items.reopen(ALICE, "jobs-1", "fixed the flaky test")  # the agent's parent
    assert (reopened.status, reopened.assignee, reopened.attempts, reopened.failures) == (
        "open",
        None,
        0,
        (),
    )
    view = svc.items.get("jobs-1")
    last = view.transfers[-1]
    assert (last.reason, last.from_, last.actor, last.note) == (
        "reopened",
        "alice/agent",
        "alice",
        "fixed the flaky test",
    )
    assert "jobs-1" in [i.id for i in svc.items.ready()]
    assert svc.items.claim(BOB, "jobs-1").item.attempts == 1
    with pytest.raises(Conflict):  # only a parked item is reopened
        svc.items.reopen(ALICE, "jobs-1", "again")


def test_the_default_policy_never_parks(svc: Service, clock: tenure.FakeClock) -> None:
    assert Policy().max_attempts == 0
    svc.items.create(CAROL, "other", id="free")
    for _ in range(5):
        lapse(svc, clock, ALICE, "free")
    item = svc.items.get("free").item
    assert (item.status, item.attempts, len(item.failures)) == ("in_progress", 5, 5)


def test_max_attempts_is_checked() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        Policy(max_attempts=-1)


def test_a_lapse_the_reaper_has_not_seen_is_counted_by_the_next_claim(
    svc: Service, clock: tenure.FakeClock
) -> None:
    for who in (ALICE, BOB):  # no reaper: each takeover counts the lapse it replaces
        svc.items.claim(who, "jobs-1", ttl_ms=TTL, takeover=True, reason="again")
        clock.advance(TTL + 1)
    item = svc.items.get("jobs-1").item
    assert [f.reason for f in item.failures] == ["lapsed"] and item.attempts == 2
    svc.items.claim(CAROL, "jobs-1", ttl_ms=TTL, takeover=True, reason="again")
    clock.advance(TTL + 1)
    with pytest.raises(Parked):  # the third lapse reaches the limit: this claim is refused
        svc.items.claim(ALICE, "jobs-1", takeover=True, reason="once more")
    item = svc.items.get("jobs-1").item
    assert (item.status, item.assignee, len(item.failures)) == ("parked", "carol", 3)
    Reaper(svc).run_once()  # and the reaper does not count it again
    assert len(svc.items.get("jobs-1").item.failures) == 3
