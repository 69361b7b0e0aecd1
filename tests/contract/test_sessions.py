"""Sessions: several running holders under one principal exclude each other like strangers.

A service deployed as replicas that share one bearer token is one principal with one session per
replica; re-acquiring renews only for the same principal *and* session.
"""

from __future__ import annotations

import json

import pytest

import tenure
from tenure import LeaseHeld, NotHolder, Service

from ._items import ALICE, BOB, lapse, snapshot


def test_another_session_of_the_holder_is_refused_and_relabels_nothing(
    service: Service, clock: tenure.FakeClock
) -> None:
    first = service.acquire("web", "jobs/nightly", ttl_ms=10_000, task="run-1", session="r1")
    assert (first.holder, first.session) == ("web", "r1")
    clock.advance(1_000)
    before = service.get("jobs/nightly")
    events = service.events(type="acquired")
    with pytest.raises(LeaseHeld) as caught:
        service.acquire(
            "web", "jobs/nightly", ttl_ms=600_000, task="run-2", meta={"x": 1}, session="r2"
        )
    assert caught.value.info() == {
        "key": "jobs/nightly",
        "holder": "web",
        "session": "r1",
        "task": "run-1",
        "expires_at": first.expires_at,
        "token": first.token,
        "held_key": "jobs/nightly",
        "scope": "key",
    }
    after = service.get("jobs/nightly")
    assert after == before  # no new task, ttl, deadline or meta
    assert (after.task, after.ttl_ms, after.expires_at) == ("run-1", 10_000, first.expires_at)
    assert service.events(type="acquired") == events
    (conflict,) = service.events(type="conflict")
    assert (conflict.actor, conflict.data["wanted_session"]) == ("web", "r2")
    assert service.contention("jobs/nightly") == 1


def test_the_same_session_renews_and_keeps_its_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    first = service.acquire("web", "k", ttl_ms=10_000, task="a", session="r1")
    clock.advance(5_000)
    again = service.acquire("web", "k", ttl_ms=20_000, task="b", session="r1")
    assert (again.token, again.session, again.task) == (first.token, "r1", "b")
    assert again.expires_at == clock.now_ms() + 20_000 and again.renewals == 1


def test_no_session_is_the_default_session(service: Service) -> None:
    first = service.acquire("jo", "k")
    assert first.session == "" and service.acquire("jo", "k", session="").token == first.token
    with pytest.raises(LeaseHeld) as caught:
        service.acquire("jo", "k", session="cli")
    assert caught.value.session == ""


def test_a_lapsed_lease_of_a_sibling_session_is_acquired_with_the_next_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    first = service.acquire("web", "k", ttl_ms=1_000, session="r1")
    clock.advance(1_000)
    second = service.acquire("web", "k", ttl_ms=1_000, session="r2")
    assert (second.token, second.session) == (first.token + 1, "r2")
    assert [e.data.get("session") for e in service.events(type="expired")] == ["r1"]


def test_renew_all_of_a_session_keeps_a_dead_siblings_leases_lapsing(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("agent", "a/live", ttl_ms=3_000, session="A")
    service.acquire("agent", "a/dead", ttl_ms=3_000, session="B")
    for _ in range(3):  # A heartbeats, B was kill -9ed
        clock.advance(1_000)
        renewed = service.renew_all("agent", session="A")
        assert [lease.key for lease in renewed.renewed] == ["a/live"]
    assert service.get("a/live").state == "live"
    assert service.get("a/dead").state == "expired"
    # naming the dead sibling's key does not renew it either
    result = service.renew_all("agent", keys=["a/live", "a/dead"], session="A")
    assert [x.key for x in result.renewed] == ["a/live"]
    assert [(x.key, x.reason) for x in result.lost] == [("a/dead", "not_held")]


def test_renew_all_without_a_session_renews_only_the_default_session(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("agent", "k1", ttl_ms=3_000, session="A")
    service.acquire("agent", "k2", ttl_ms=3_000, session="B")
    service.acquire("agent", "k3", ttl_ms=3_000)
    for _ in range(3):  # the default session heartbeats; A and B were kill -9ed
        clock.advance(1_000)
        assert [x.key for x in service.renew_all("agent").renewed] == ["k3"]
        assert [x.key for x in service.renew_all("agent", session="").renewed] == ["k3"]
    assert [service.get(k).state for k in ("k1", "k2", "k3")] == ["expired", "expired", "live"]
    body = json.loads(service.renew_all_json("agent"))
    assert [x["key"] for x in body["renewed"]] == ["k3"]


def test_renew_all_of_named_keys_reaches_every_session_of_the_caller(service: Service) -> None:
    service.acquire("agent", "k1", session="A")
    service.acquire("agent", "k2", session="B")
    service.acquire("bob", "k3")
    result = service.renew_all("agent", keys=["k1", "k2", "k3"])
    assert [x.key for x in result.renewed] == ["k1", "k2"]
    assert [(x.key, x.reason) for x in result.lost] == [("k3", "not_held")]


def test_a_release_without_a_token_is_only_for_its_own_session(service: Service) -> None:
    lease = service.acquire("web", "k", session="r1")
    with pytest.raises(NotHolder) as caught:
        service.release("web", "k", session="r2")
    assert (caught.value.holder, caught.value.session) == ("web", "r1")
    with pytest.raises(NotHolder):
        service.release("web", "k")  # the default session is another session
    assert service.get("k").state == "live"
    # the token proves the lease: any session of the holder may release with it
    assert service.release("web", "k", lease.token, session="r2").released


def test_leases_and_events_show_their_session(service: Service) -> None:
    service.acquire("web", "k", session="replica-7")
    (listed,) = service.list()
    assert listed.session == "replica-7" and listed.to_dict()["session"] == "replica-7"
    (acquired,) = service.events(type="acquired")
    assert acquired.data == {"ttl_ms": 30_000, "session": "replica-7"}
    service.release("web", "k", session="replica-7")
    (released,) = service.events(type="released")
    assert released.data["session"] == "replica-7"


@pytest.mark.parametrize(
    ("session", "field_error"),
    [
        (1, "must be a string"),
        ("x" * 129, "at most 128 bytes"),
        ("é" * 65, "at most 128 bytes"),
        ("a\nb", "control characters"),
    ],
    ids=["not-text", "too-long", "too-many-bytes", "control"],
)
def test_a_bad_session_is_refused_and_changes_nothing(
    service: Service, session: object, field_error: str
) -> None:
    before = (service.events(), service.list())
    for call in (
        lambda: service.acquire("web", "k", session=session),  # type: ignore[arg-type]
        lambda: service.renew_all("web", session=session),  # type: ignore[arg-type]
        lambda: service.release("web", "k", session=session),  # type: ignore[arg-type]
    ):
        with pytest.raises(tenure.InvalidRequest) as caught:
            call()
        assert caught.value.field == "session" and field_error in caught.value.detail
    assert (service.events(), service.list()) == before
    assert service.acquire("web", "k", session="é" * 64).session == "é" * 64


# item claims ------------------------------------------------------------------------------------
def test_a_claim_from_another_session_is_lease_held_and_changes_nothing(svc: Service) -> None:
    first = svc.items.claim(ALICE, "job", ttl_ms=10_000, task="t1", session="s1")
    assert first.lease.session == "s1"
    before = snapshot(svc, "job")
    with pytest.raises(LeaseHeld) as caught:
        svc.items.claim(ALICE, "job", ttl_ms=60_000, task="t2", session="s2")
    assert (caught.value.holder, caught.value.session) == ("alice", "s1")
    after = snapshot(svc, "job")
    # the item, its lease and the live leases are as they were; only the conflict is counted
    assert (after[1], after[3], after[4]) == (before[1], before[3], before[4])
    assert [e.type for e in after[0][len(before[0]) :]] == ["conflict"]
    assert svc.items.get("job").lease == first.lease
    # the same session claiming again renews, same epoch
    again = svc.items.claim(ALICE, "job", session="s1")
    assert again.lease.token == first.lease.token


def test_a_stale_handle_does_not_release_a_fresh_claim_of_the_same_principal(
    svc: Service, clock: tenure.FakeClock
) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000, session="worker-1")
    lapse(clock, 1_000)
    fresh = svc.items.claim(ALICE, "job", ttl_ms=10_000, session="worker-2")
    assert fresh.lease.token == old.lease.token + 1
    before = snapshot(svc, "job")
    result = svc.items.release(ALICE, "job", epoch=old.lease.token, session="worker-1")
    assert result.released is False and result.item.assignee == "alice"
    assert snapshot(svc, "job") == before
    # without an epoch, only the session's own claim is released
    with pytest.raises(NotHolder):
        svc.items.release(ALICE, "job", session="worker-1")
    assert snapshot(svc, "job") == before
    done = svc.items.release(ALICE, "job", epoch=fresh.lease.token)
    assert done.released and done.item.assignee is None and done.item.status == "open"


def test_dispatch_gives_the_agents_claim_its_session(svc: Service) -> None:
    dispatched = svc.items.dispatch(ALICE, "job", agent="a1", session="supervisor-9")
    assert (dispatched.lease.holder, dispatched.lease.session) == ("alice/a1", "supervisor-9")


def test_a_sibling_session_may_not_claim_but_bob_sees_the_holder(svc: Service) -> None:
    svc.items.claim(ALICE, "job", session="s1")
    with pytest.raises(LeaseHeld) as caught:
        svc.items.claim(BOB, "job")
    assert (caught.value.holder, caught.value.session) == ("alice", "s1")
