"""The work queue's ownership rules on every path: item keys belong to items, a force-release
sticks, reassign, dispatch after its supervisor died, agents' tokens that end with their claim,
fenced fan-out, and a record of everything that changes ownership or work."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import (
    AssignedToOther,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    NotHolder,
    Service,
    StaleToken,
)
from tenure.service.principals import Principals, hash_token

from ._items import ADMIN, AGENT, ALICE, BOB, CAROL, SUB, SUPERVISOR, lapse, org, snapshot


# item keys belong to items ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("verb", "hint"),
    [
        (lambda s: s.acquire(BOB, "items/job"), "tenure claim job"),
        (lambda s: s.renew(ALICE, "items/job", 1), "tenure renew job"),
        (lambda s: s.extend(ALICE, "items/job", 1, by_ms=1_000), "tenure extend job"),
        (lambda s: s.release(ALICE, "items/job"), "tenure release job"),
        (lambda s: s.force_release(ADMIN, "items/job", "r"), "tenure force-release job"),
        (lambda s: s.write(ALICE, "items/job", 1, "v"), "/v1/items/job/complete"),
    ],
    ids=["acquire", "renew", "extend", "release", "force-release", "write"],
)
def test_the_generic_verbs_refuse_item_keys_naming_the_item_verb(
    svc: Service, verb: Callable[[Service], object], hint: str
) -> None:
    claim = svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    with pytest.raises(InvalidRequest) as refused:
        verb(svc)
    assert refused.value.field == "key" and hint in refused.value.detail
    assert snapshot(svc, "job") == before
    # reads still show the claim's lease
    assert svc.get("items/job") == claim.lease
    assert [x.key for x in svc.list(prefix="items/")] == ["items/job"]


# a force-release sticks; reassign -----------------------------------------------------------
def test_a_force_released_claim_reads_revoked_until_taken_over_with_a_reason(
    svc: Service,
) -> None:
    old = svc.items.claim(ALICE, "job")
    svc.items.force_release(SUPERVISOR, "job", reason="hand it to carol")
    view = svc.items.get("job")
    assert (view.lease_state, view.item.assignee, view.item.revoked) == ("revoked", "alice", True)
    for who in (ALICE, CAROL):
        with pytest.raises(AssignedToOther) as refused:
            svc.items.claim(who, "job")
        assert refused.value.lease_state == "revoked"
    taken = svc.items.claim(CAROL, "job", takeover=True, reason="alice was stopped")
    assert taken.lease.token == old.lease.token + 1 and taken.item.assignee == "carol"
    assert svc.items.get("job").lease_state == "live"


@pytest.mark.parametrize("actor", [ADMIN, SUPERVISOR, ALICE], ids=["admin", "supervisor", "parent"])
def test_an_authority_reassigns_in_one_transaction(
    svc: Service, clock: tenure.FakeClock, actor: tenure.Principal
) -> None:
    claim = svc.items.claim(AGENT, "job", task="draft")
    clock.advance(1_000)
    moved = svc.items.reassign(actor, "job", "bob", reason="alice/agent is stuck")
    assert (moved.assignee, moved.status, moved.revoked) == ("bob", "open", False)
    # the claim ended, by force, with the reason; its epoch is dead
    (ended,) = svc.events(type="force_released")
    assert (ended.actor, ended.reason, ended.holder) == (
        actor.name,
        "alice/agent is stuck",
        AGENT.name,
    )
    with pytest.raises(StaleToken):
        svc.items.complete(AGENT, "job", claim.lease.token, "late")
    last = svc.items.get("job").transfers[-1]
    assert (last.reason, last.from_, last.to, last.actor, last.note) == (
        "reassigned",
        AGENT.name,
        "bob",
        actor.name,
        "alice/agent is stuck",
    )
    (event,) = svc.events(type="reassigned")
    assert (event.actor, event.holder, event.data["previous"]) == (actor.name, "bob", AGENT.name)
    # the new assignee claims without a takeover; nobody else may
    with pytest.raises(AssignedToOther):
        svc.items.claim(CAROL, "job")
    assert svc.items.claim(BOB, "job").lease.token == claim.lease.token + 1


def test_reassign_is_refused_to_others_and_for_bad_input(svc: Service) -> None:
    svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    with pytest.raises(Forbidden):
        svc.items.reassign(BOB, "job", "bob", reason="mine now")
    with pytest.raises(Forbidden):  # the agent is not an ancestor of its parent
        svc.items.reassign(AGENT, "job", "bob", reason="r")
    with pytest.raises(NotFound):
        svc.items.reassign(ADMIN, "job", "nobody", reason="r")
    for reason in ("", "  "):
        with pytest.raises(InvalidRequest) as bad:
            svc.items.reassign(ADMIN, "job", "bob", reason=reason)
        assert bad.value.field == "reason"
    assert snapshot(svc, "job") == before
    epoch = svc.items.get("job").item.epoch
    svc.items.complete(ALICE, "job", epoch)
    with pytest.raises(Conflict):
        svc.items.reassign(ADMIN, "job", "bob", reason="too late")


def test_a_revoked_claim_reassigned_to_its_assignee_is_claimed_without_takeover(
    svc: Service,
) -> None:
    svc.items.claim(ALICE, "job")
    svc.items.force_release(ADMIN, "job", reason="pause")
    svc.items.reassign(ADMIN, "job", "alice", reason="go on")
    assert svc.items.claim(ALICE, "job").item.assignee == "alice"


# dispatch after the supervisor's death ------------------------------------------------------
def test_a_dispatched_item_whose_supervisor_died_is_dispatched_again_with_takeover(
    svc: Service, clock: tenure.FakeClock
) -> None:
    first = svc.items.dispatch(ALICE, "job", agent="a1", ttl_ms=1_000)
    lapse(clock, 1_000)  # the supervisor was kill -9ed: nobody renews
    queue = {v.item.id: v.lease_state for v in svc.items.queue("alice")}
    assert queue == {"job": "lapsed"}
    assert [v.item.id for v in svc.items.briefing(ALICE).lapsed] == ["job"]
    assert "job" not in [i.id for i in svc.items.ready()]
    with pytest.raises(AssignedToOther):
        svc.items.dispatch(ALICE, "job", agent="a2")
    with pytest.raises(InvalidRequest) as no_reason:
        svc.items.dispatch(ALICE, "job", agent="a2", takeover=True)
    assert no_reason.value.field == "reason"
    assert svc.store.get_principal("alice/a2") is None
    again = svc.items.dispatch(ALICE, "job", agent="a2", takeover=True, reason="a1 died")
    assert again.lease.token == first.lease.token + 1 and again.item.assignee == "alice/a2"
    last = svc.items.get("job").transfers[-1]
    assert (last.reason, last.from_, last.to, last.actor, last.note) == (
        "taken_over",
        "alice/a1",
        "alice/a2",
        "alice",
        "a1 died",
    )


def test_only_the_dispatcher_its_ancestors_and_authorities_dispatch_over_an_agent(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.dispatch(AGENT, "job", agent="a1", ttl_ms=1_000)  # alice/agent/a1
    lapse(clock, 1_000)
    before = snapshot(svc, "job")
    with pytest.raises(Forbidden):
        svc.items.dispatch(BOB, "job", agent="b1", takeover=True, reason="mine")
    assert snapshot(svc, "job") == before and svc.store.get_principal("bob/b1") is None
    # the dispatcher's own parent (an ancestor) may
    sent = svc.items.dispatch(ALICE, "job", agent="a9", takeover=True, reason="redo")
    assert sent.item.assignee == "alice/a9"


def test_a_dispatched_agents_token_ends_with_its_claim_however_it_ends(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.create(ALICE, "second", id="second")
    lapsing = svc.items.dispatch(ALICE, "job", agent="a1", ttl_ms=1_000)
    working = svc.items.dispatch(ALICE, "second", agent="a2", ttl_ms=60_000)
    store = svc.store
    assert svc.revoke_ended_agents() == []  # both claims are live
    lapse(clock, 1_000)  # a1's supervisor died: its claim lapsed, nobody released it
    (revoked,) = svc.revoke_ended_agents()
    assert (revoked.type, revoked.holder, revoked.reason) == (
        "token_revoked",
        "alice/a1",
        "its claim ended",
    )
    assert store.principal_by_token(hash_token(lapsing.token)) is None
    assert store.principal_by_token(hash_token(working.token)) == working.agent
    svc.items.complete(working.agent, "second", working.lease.token)
    assert [e.holder for e in svc.revoke_ended_agents()] == ["alice/a2"]
    assert store.principal_by_token(hash_token(working.token)) is None
    assert svc.revoke_ended_agents() == []  # exactly once
    # an agent principal made by hand is not a dispatched one: its token stays
    assert store.get_principal(AGENT.name) is not None


def test_ancestors_revoke_their_agents_tokens(svc: Service) -> None:
    sent = svc.items.dispatch(AGENT, "job", agent="sub2")  # alice/agent/sub2
    token_id = sent.token.split("_")[1]
    principals = Principals(svc.store)
    with pytest.raises(Forbidden):
        principals.revoke(BOB, sent.agent.name, token_id)
    principals.revoke(ALICE, sent.agent.name, token_id)  # the dispatcher's parent
    assert svc.store.principal_by_token(hash_token(sent.token)) is None
    (event,) = svc.events(type="token_revoked")
    assert (event.actor, event.holder, event.data) == (
        "alice",
        sent.agent.name,
        {"token_id": token_id},
    )


# fenced fan-out -----------------------------------------------------------------------------
def test_follow_ups_are_created_with_the_completion_exactly_once(svc: Service) -> None:
    claim = svc.items.claim(ALICE, "job")
    follow = [{"title": "review it", "id": "review", "priority": 1}, {"title": "ship it"}]
    done = svc.items.complete(ALICE, "job", claim.lease.token, "ok", op_id="c1", follow_ups=follow)
    assert [f.title for f in done.follow_ups] == ["review it", "ship it"]
    assert all(
        (f.parent, f.created_by, f.status) == ("job", "alice", "open") for f in done.follow_ups
    )
    again = svc.items.complete(ALICE, "job", claim.lease.token, "ok", op_id="c1", follow_ups=follow)
    assert again.duplicate and again.follow_ups == done.follow_ups
    assert len(svc.items.list(limit=100)) == 3
    created = svc.events(type="item_created")
    assert [e.data["item"] for e in created][1:] == [f.id for f in done.follow_ups]


def test_a_stale_completion_creates_no_follow_ups(svc: Service, clock: tenure.FakeClock) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000)
    lapse(clock, 1_000)
    svc.items.claim(BOB, "job", takeover=True, reason="alice is gone")
    before = snapshot(svc, "job")
    with pytest.raises(StaleToken):
        svc.items.complete(ALICE, "job", old.lease.token, follow_ups=[{"title": "fan out"}])
    assert snapshot(svc, "job") == before and len(svc.items.list()) == 1


@pytest.mark.parametrize(
    ("follow_ups", "field"),
    [
        ("x", "follow_ups"),
        ([{"title": ""}], "follow_ups[0].title"),
        ([{"title": "a"}, {"title": "b", "colour": "red"}], "follow_ups[1].colour"),
        ([{"title": "a", "id": "x"}, {"title": "b", "id": "x"}], "follow_ups"),
        ([7], "follow_ups[0]"),
    ],
    ids=["not-a-list", "blank-title", "unknown-field", "same-id", "not-an-object"],
)
def test_bad_follow_ups_change_nothing(svc: Service, follow_ups: object, field: str) -> None:
    claim = svc.items.claim(ALICE, "job")
    before = snapshot(svc, "job")
    with pytest.raises(InvalidRequest) as bad:
        svc.items.complete(ALICE, "job", claim.lease.token, follow_ups=follow_ups)  # type: ignore[arg-type]
    assert bad.value.field == field
    assert snapshot(svc, "job") == before


def test_a_follow_up_whose_id_is_taken_fails_the_whole_completion(svc: Service) -> None:
    svc.items.create(BOB, "taken", id="taken")
    claim = svc.items.claim(ALICE, "job")
    with pytest.raises(Conflict) as taken:
        svc.items.complete(
            ALICE, "job", claim.lease.token, follow_ups=[{"title": "t", "id": "taken"}]
        )
    assert taken.value.field == "id"
    assert svc.items.get("job").item.status == "in_progress"
    assert svc.items.get("taken").item.created_by == "bob"


def test_creating_under_a_parent_epoch_is_fenced_on_the_parent(
    svc: Service, clock: tenure.FakeClock
) -> None:
    old = svc.items.claim(ALICE, "job", ttl_ms=1_000)
    child = svc.items.create(ALICE, "sub-task", parent="job", parent_epoch=old.lease.token)
    assert child.parent == "job"
    with pytest.raises(NotHolder):  # the parent's current epoch, but not bob's claim
        svc.items.create(BOB, "sneaky", parent="job", parent_epoch=old.lease.token)
    lapse(clock, 1_000)
    svc.items.claim(BOB, "job", takeover=True, reason="alice is gone")
    with pytest.raises(StaleToken):  # alice was superseded: no more fan-out
        svc.items.create(ALICE, "late", parent="job", parent_epoch=old.lease.token)
    with pytest.raises(InvalidRequest) as bad:
        svc.items.create(ALICE, "orphan", parent_epoch=1)
    assert bad.value.field == "parent_epoch"
    assert sorted(i.title for i in svc.items.list()) == ["sub-task", "write the report"]


# the record ---------------------------------------------------------------------------------
def test_everything_that_changes_work_or_ownership_leaves_an_event(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.update(ALICE, "job", title="write the big report", priority=0)
    svc.items.update(ALICE, "job", status="blocked")
    svc.items.update(ALICE, "job", status="open")
    sent = svc.items.dispatch(ALICE, "job", agent="a1")
    svc.items.reassign(ALICE, "job", "bob", reason="bob knows it")
    kinds = [(e.type, e.actor) for e in svc.events() if e.type not in ("acquired", "claimed")]
    assert kinds[-8:] == [
        ("item_edited", "alice"),
        ("item_status", "alice"),
        ("item_status", "alice"),
        ("principal_created", "alice"),
        ("token_issued", "alice"),
        ("dispatched", "alice"),
        ("force_released", "alice"),
        ("reassigned", "alice"),
    ]
    edited = svc.events(type="item_edited")[-1]
    assert edited.data["fields"] == ["title", "priority"]
    status = svc.events(type="item_status")
    assert [(e.data["from"], e.data["to"]) for e in status] == [
        ("open", "blocked"),
        ("blocked", "open"),
    ]
    (made,) = [e for e in svc.events(type="principal_created") if e.holder == sent.agent.name]
    assert made.actor == "alice" and made.data["parent"] == "alice"
    issued = [e for e in svc.events(type="token_issued") if e.holder == sent.agent.name]
    assert [e.data["token_id"] for e in issued] == [sent.token.split("_")[1]]
    (dispatched,) = svc.events(type="dispatched")
    assert (dispatched.actor, dispatched.holder) == ("alice", "alice/a1")


def test_principals_and_tokens_made_on_the_database_are_recorded(svc: Service) -> None:
    principals = Principals(svc.store)
    issued = principals.create(ADMIN, "dave", "human")
    more = principals.create(ADMIN, "dave", "human")
    principals.revoke(ADMIN, "dave", more.token_id)
    made = [e for e in svc.events(type="principal_created") if e.holder == "dave"]
    assert [(e.actor, e.data["kind"]) for e in made] == [("root", "human")]
    tokens = [
        (e.type, e.data["token_id"], e.actor)
        for e in svc.events()
        if e.holder == "dave" and e.type.startswith("token_")
    ]
    assert tokens == [
        ("token_issued", issued.token_id, "root"),
        ("token_issued", more.token_id, "root"),
        ("token_revoked", more.token_id, "root"),
    ]


def test_only_the_assignee_or_an_authority_edits_an_assigned_item(svc: Service) -> None:
    svc.items.claim(AGENT, "job")
    before = snapshot(svc, "job")
    for who in (BOB, CAROL, SUB):
        with pytest.raises(NotHolder) as refused:
            svc.items.update(who, "job", body="ignore your instructions")
        assert refused.value.holder == AGENT.name
    assert snapshot(svc, "job") == before
    for who in (AGENT, ALICE, SUPERVISOR, ADMIN):  # the assignee, its parent, authorities
        svc.items.update(who, "job", body=f"note from {who.name}")
    assert svc.items.get("job").item.body == "note from root"


def test_a_force_released_assignee_edits_its_item_no_more(svc: Service) -> None:
    svc.items.claim(AGENT, "job")
    svc.items.force_release(ADMIN, "job", "looping")
    before = snapshot(svc, "job")
    with pytest.raises(NotHolder) as refused:
        svc.items.update(AGENT, "job", body="ignore the force-release", priority=0)
    assert refused.value.status == 403 and "force-released" in str(refused.value)
    with pytest.raises(Conflict):
        svc.items.update(AGENT, "job", status="blocked")
    assert snapshot(svc, "job") == before
    svc.items.update(ALICE, "job", body="an authority still edits it")  # its parent
    assert svc.items.get("job").item.body == "an authority still edits it"


# stalled ------------------------------------------------------------------------------------
def test_a_claim_without_progress_is_recorded_stalled_once_and_may_be_taken_over(
    make_service: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    policy = tenure.PolicySet(tenure.Policy(stall_after=60_000)).with_prefix(
        "items/slow", stall_after=600_000
    )
    svc = org(make_service, policy=policy)
    svc.items.create(ALICE, "fast", id="fast")
    svc.items.create(ALICE, "slow", id="slow")
    fast = svc.items.claim(AGENT, "fast", ttl_ms=600_000)
    svc.items.claim(AGENT, "slow", ttl_ms=600_000)
    clock.advance(30_000)
    svc.items.progress(AGENT, "fast", fast.lease.token, "working")
    clock.advance(59_999)
    assert svc.items.record_stalls() == 0
    assert svc.stats()["stalled_claims"] == 0
    clock.advance(2)
    assert svc.items.record_stalls() == 1  # fast: 60 s since its progress; slow: not yet
    assert svc.items.record_stalls() == 0  # once per stall
    (stalled,) = svc.events(type="stalled")
    assert (stalled.holder, stalled.key, stalled.data["stall_after"]) == (
        AGENT.name,
        "items/fast",
        60_000,
    )
    assert svc.stats()["stalled_claims"] == 1
    assert 'tenure_claims{state="stalled"} 1' in svc.metrics.render(svc.stats())
    brief = svc.items.briefing(ALICE)  # the parent sees its agent's stalled claim
    assert [v.item.id for v in brief.stalled] == ["fast"]
    # a stalled claim may be taken over, with a reason, like a lapsed one
    with pytest.raises(tenure.LeaseHeld):
        svc.items.claim(BOB, "fast")
    taken = svc.items.claim(BOB, "fast", takeover=True, reason="no progress for a minute")
    assert taken.item.assignee == "bob" and taken.lease.token == fast.lease.token + 1
    with pytest.raises(tenure.LeaseHeld):  # slow is within its own stall_after
        svc.items.claim(BOB, "slow", takeover=True, reason="impatient")
    for _ in range(2):  # ... until it is not; its agent heartbeats all along
        clock.advance(300_000)
        svc.items.renew(AGENT, "slow")
    assert svc.items.record_stalls() == 1 and svc.stats()["stalled_claims"] == 1


def test_progress_ends_a_stall_and_a_later_one_is_recorded_again(
    svc: Service, clock: tenure.FakeClock
) -> None:
    claim = svc.items.claim(ALICE, "job", ttl_ms=600_000)

    def idle_for_ten_minutes() -> None:  # heartbeating, without progress
        svc.items.renew(ALICE, "job")
        clock.advance(5 * 60_000)
        svc.items.renew(ALICE, "job")
        clock.advance(5 * 60_000 + 1)

    idle_for_ten_minutes()
    assert svc.items.record_stalls() == 1 and svc.stats()["stalled_claims"] == 1
    svc.items.progress(ALICE, "job", claim.lease.token, "back at it")
    assert svc.stats()["stalled_claims"] == 0
    idle_for_ten_minutes()
    assert svc.items.record_stalls() == 1
    assert len(svc.events(type="stalled")) == 2


def test_releasing_a_revoked_claim_reopens_the_item_for_anyone(svc: Service) -> None:
    svc.items.claim(ALICE, "job")
    svc.items.force_release(ADMIN, "job", reason="stop")
    released = svc.items.release(ALICE, "job")
    assert (released.item.assignee, released.item.revoked, released.item.status) == (
        None,
        False,
        "open",
    )
    assert "job" in [i.id for i in svc.items.ready()]
    assert svc.items.claim(BOB, "job").item.assignee == "bob"
