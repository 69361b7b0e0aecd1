"""Per-principal bounds (``tenure.core.quotas``) on both backends: live leases, items created per
minute, dispatched agents still working. A refusal is ``QuotaExceeded`` naming the bound, what
the principal has and the setting, and changes nothing; renewing or re-acquiring a lease you
hold is not a new one; an ended lease or agent frees its place; admins are bounded too."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

import tenure
from tenure import QuotaExceeded, Service
from tenure.core.quotas import MINUTE_MS, Quotas
from tenure.errors import Conflict
from tenure.service.hooks import claude_code
from tenure.store.postgres.tx import Crowded, Group

from ._items import ADMIN, ALICE, BOB, org, snapshot


@pytest.fixture
def bounded(make_store: Callable[..., tenure.Store]) -> Callable[..., Service]:
    """A service with the bounds given (the rest at their defaults), its store knowing the
    principals of the item tests."""

    def make(**bounds: int) -> Service:
        return org(lambda: Service(make_store(), quotas=Quotas(**bounds)))

    return make


def everything(service: Service) -> tuple[Any, ...]:
    return (service.events(limit=1000), service.list(), service.items.list(limit=1000))


# live leases --------------------------------------------------------------------------------
def test_a_new_lease_past_the_bound_is_refused_naming_it_and_nothing_changes(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(live_leases=3)
    for key in ("a", "b", "c"):
        svc.acquire("alice", key)
    before = everything(svc)
    with pytest.raises(QuotaExceeded) as over:
        svc.acquire("alice", "d")
    err = over.value
    assert (err.limit, err.current, err.setting, err.key) == (3, 3, "TENURE_MAX_LIVE_LEASES", "d")
    assert err.status == 429 and "TENURE_MAX_LIVE_LEASES=3" in err.detail
    assert everything(svc) == before
    assert svc.store.get("d") is None  # not even the row of a new key
    svc.acquire("bob", "d")  # another principal's bound is its own


def test_renewing_or_re_acquiring_a_lease_you_hold_is_not_a_new_one(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(live_leases=2)
    a = svc.acquire("alice", "a", session="s")
    svc.acquire("alice", "b", session="s")
    again = svc.acquire("alice", "a", session="s")  # the same lease, renewed
    assert again.token == a.token and again.renewals == 1
    assert svc.renew("alice", "a", a.token).token == a.token
    svc.renew_all("alice")
    with pytest.raises(QuotaExceeded):
        svc.acquire("alice", "c", session="s")


def test_an_ended_lease_frees_its_place(
    bounded: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    svc = bounded(live_leases=2)
    a = svc.acquire("alice", "a", ttl_ms=1_000)
    svc.acquire("alice", "b", ttl_ms=60_000)
    with pytest.raises(QuotaExceeded):
        svc.acquire("alice", "c")
    svc.release("alice", "a", a.token)
    c = svc.acquire("alice", "c", ttl_ms=1_000)  # the released one's place
    svc.force_release(ADMIN, "b", "stuck")
    svc.acquire("alice", "d", ttl_ms=60_000)  # the force-released one's place
    with pytest.raises(QuotaExceeded):
        svc.acquire("alice", "e")
    clock.advance(1_000)  # c lapses, unrecorded: it is not live, so it holds no place
    svc.acquire("alice", "e")
    assert svc.get("c").state == "expired" and c.key == "c"


def test_a_subtree_lease_and_item_claims_count(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(live_leases=3)
    svc.acquire("alice", "tree/", scope="subtree")
    svc.items.create(BOB, "job", id="job")
    svc.items.claim(ALICE, "job")
    svc.acquire("alice", "k")
    with pytest.raises(QuotaExceeded):
        svc.acquire("alice", "other/", scope="subtree")
    svc.items.create(BOB, "two", id="two")
    before = snapshot(svc, "two")
    with pytest.raises(QuotaExceeded) as over:
        svc.items.claim(ALICE, "two")
    assert over.value.current == 3
    assert snapshot(svc, "two") == before


def test_admins_are_bounded_too(bounded: Callable[..., Service]) -> None:
    svc = bounded(live_leases=1)
    svc.acquire(ADMIN, "a")
    with pytest.raises(QuotaExceeded):
        svc.acquire(ADMIN, "b")


def test_a_group_counts_its_own_new_leases(bounded: Callable[..., Service]) -> None:
    svc = bounded(live_leases=3)
    svc.acquire("alice", "a")
    with svc.group():  # within the bound: the group commits
        svc.acquire("alice", "b")
        svc.acquire("bob", "x")
        svc.acquire("alice", "a")  # a renewal: not a new lease
    with pytest.raises(QuotaExceeded) as over, svc.group():
        svc.acquire("alice", "c")
        svc.acquire("bob", "y")
        svc.acquire("alice", "d")  # SQLite refuses it here; PostgreSQL at the group's commit
    assert (over.value.limit, over.value.setting) == (3, "TENURE_MAX_LIVE_LEASES")
    assert [lease.key for lease in svc.list()] == ["a", "b", "x"]  # nothing of the group


def test_a_principal_at_its_bound_does_not_make_the_groups_it_joins_fail(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(live_leases=1)
    svc.acquire("alice", "a")
    with pytest.raises(QuotaExceeded), svc.group():
        svc.acquire("alice", "b")  # PostgreSQL: found at the group's commit, the group lost
    with svc.group():  # from now on alice's new leases are counted in the call
        with pytest.raises(QuotaExceeded):
            svc.acquire("alice", "c")
        svc.acquire("bob", "z")
    assert [lease.key for lease in svc.list()] == ["a", "z"]


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "grouped"])
def test_concurrent_acquisitions_never_pass_the_bound(
    bounded: Callable[..., Service], make_store: Callable[..., tenure.Store], grouped: bool
) -> None:
    """Eight connections acquire for one principal at once, each call alone or in a group
    of its own (as the server's group commits run them)."""
    limit, threads = 5, 8
    services = [bounded(live_leases=limit)] + [
        Service(make_store(), quotas=Quotas(live_leases=limit)) for _ in range(threads - 1)
    ]
    start = threading.Barrier(threads)
    refused: list[QuotaExceeded] = []

    def run(svc: Service, n: int) -> None:
        start.wait(timeout=10)
        for i in range(3):
            try:
                with svc.group() if grouped else contextlib.nullcontext():
                    svc.acquire("alice", f"k{n}-{i}", ttl_ms=60_000)
            except QuotaExceeded as err:
                refused.append(err)

    workers = [threading.Thread(target=run, args=(s, n)) for n, s in enumerate(services)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert len(services[0].list(holder="alice")) == limit
    assert len(refused) == threads * 3 - limit


# items per minute ---------------------------------------------------------------------------
def test_items_past_the_minutes_bound_are_refused_until_the_next_minute(
    bounded: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    svc = bounded(items_per_minute=3)
    clock.advance(MINUTE_MS - clock.now_ms() % MINUTE_MS)  # the start of a minute
    clock.advance(20_000)
    for n in range(3):
        svc.items.create(ALICE, f"t{n}", id=f"i{n}")
    before = everything(svc)
    with pytest.raises(QuotaExceeded) as over:
        svc.items.create(ALICE, "one too many", id="i3")
    err = over.value
    assert (err.limit, err.current, err.setting) == (3, 3, "TENURE_MAX_ITEMS_PER_MINUTE")
    assert err.retry_after_s == 40
    assert everything(svc) == before
    svc.items.create(BOB, "bob's own bound", id="b0")
    clock.advance(40_000)  # the next minute
    svc.items.create(ALICE, "room again", id="i3")


def test_a_completions_follow_ups_and_fenced_creations_count(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(items_per_minute=4)
    svc.items.create(ALICE, "parent", id="p")
    epoch = svc.items.claim(ALICE, "p").lease.token
    svc.items.create(ALICE, "fenced", parent="p", id="f", parent_epoch=epoch)
    before = snapshot(svc, "p")
    ups = [{"title": f"u{n}", "id": f"u{n}"} for n in range(3)]
    with pytest.raises(QuotaExceeded) as over:
        svc.items.complete(ALICE, "p", epoch, follow_ups=ups)
    assert (over.value.current, over.value.limit) == (2, 4)
    assert snapshot(svc, "p") == before  # not completed, nothing created
    done = svc.items.complete(ALICE, "p", epoch, follow_ups=ups[:2])
    assert [i.id for i in done.follow_ups] == ["u0", "u1"]
    with pytest.raises(QuotaExceeded):
        svc.items.create(ALICE, "one too many")


def test_a_creation_refused_for_another_reason_takes_no_place(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(items_per_minute=2)
    svc.items.create(ALICE, "one", id="one")
    with pytest.raises(Conflict):
        svc.items.create(ALICE, "taken", id="one")
    svc.items.create(ALICE, "two", id="two")


# dispatched agents --------------------------------------------------------------------------
def test_dispatch_past_the_live_agents_bound_is_refused_until_one_ends(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(live_agents=2)
    for n in range(3):
        svc.items.create(BOB, f"job{n}", id=f"job{n}")
    first = svc.items.dispatch(ALICE, "job0", agent="a0")
    svc.items.dispatch(ALICE, "job1", agent="a1")
    before = snapshot(svc, "job2")
    with pytest.raises(QuotaExceeded) as over:
        svc.items.dispatch(ALICE, "job2", agent="a2")
    err = over.value
    assert (err.limit, err.current, err.setting) == (2, 2, "TENURE_MAX_LIVE_AGENTS")
    assert err.key == "items/job2"
    assert snapshot(svc, "job2") == before
    assert svc.store.get_principal("alice/a2") is None
    svc.items.dispatch(BOB, "job2", agent="b0")  # bob's agents are bob's
    svc.items.create(BOB, "job3", id="job3")
    agent = first.agent
    svc.items.release(agent, "job0", first.lease.token)  # a0's claim ended
    svc.items.dispatch(ALICE, "job3", agent="a3")


def test_a_hooks_edit_past_the_bound_is_denied_saying_why(
    bounded: Callable[..., Service],
) -> None:
    svc = bounded(live_leases=1)
    svc.acquire("jo", "elsewhere")
    edit = {
        "session_id": "s-a",
        "cwd": "/home/dev/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "/home/dev/shop/src/app.py"},
    }
    reply = claude_code(svc, "jo", edit, repo="github.com/acme/shop", root="/home/dev/shop")
    out = reply["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"].startswith("quota_exceeded: src/app.py")
    assert "TENURE_MAX_LIVE_LEASES=1" in out["permissionDecisionReason"]
    assert svc.list(holder="jo")[0].key == "elsewhere"
    svc.release("jo", "elsewhere")
    reply = claude_code(svc, "jo", edit, repo="github.com/acme/shop", root="/home/dev/shop")
    assert reply == {}  # no decision: the edit goes on, its file leased
    assert svc.list(holder="jo")[0].key == "files/github.com/acme/shop/src/app.py"


def test_groups_racing_near_the_bound_reach_it_and_never_pass_it(
    bounded: Callable[..., Service],
    make_store: Callable[..., tenure.Store],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight connections each give one principal a new lease in a group of their own, all at
    once, round after round, from two to four leases held to the bound of 5 and past it.
    PostgreSQL's groups commit side by side while a principal is far from its bound (a slot
    each new lease, a margin of the slots): with 2 slots, below 5 - 2. A group refused whole
    runs its call again alone, as the server's executor does."""
    monkeypatch.setattr(Group, "SLOTS", 2)
    monkeypatch.setattr(Crowded, "SPAN_S", 0.0)  # a refused group: the next ones still try
    limit, threads, rounds = 5, 8, 12
    services = [bounded(live_leases=limit)] + [
        Service(make_store(), quotas=Quotas(live_leases=limit)) for _ in range(threads - 1)
    ]

    def run(svc: Service, key: str, start: threading.Barrier) -> None:
        start.wait(timeout=10)
        with contextlib.suppress(QuotaExceeded):
            try:
                with svc.group():
                    svc.acquire("alice", key, ttl_ms=600_000)
            except QuotaExceeded:  # refused in the call (SQLite) or the group whole
                svc.acquire("alice", key, ttl_ms=600_000)  # again, alone

    for r in range(rounds):
        for n in range(2 + r % 3):
            services[0].acquire("alice", f"r{r}-held-{n}", ttl_ms=600_000)
        start = threading.Barrier(threads)
        workers = [
            threading.Thread(target=run, args=(svc, f"r{r}-{n}", start))
            for n, svc in enumerate(services)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        held = services[0].list(holder="alice")
        assert len(held) == limit, (r, sorted(lease.key for lease in held))
        for lease in held:
            services[0].release("alice", lease.key, lease.token)


def test_a_group_counting_in_the_calls_counts_its_own_new_leases(
    bounded: Callable[..., Service],
) -> None:
    """A principal at its bound lately is counted in each call of a group (PostgreSQL): the
    group's own new leases before the call count too, though saved only at its commit."""
    svc = bounded(live_leases=2)
    svc.acquire("alice", "a")
    with pytest.raises(QuotaExceeded), svc.group():
        svc.acquire("alice", "b")
        svc.acquire("alice", "c")  # PostgreSQL: found at the group's commit, the group lost
    with svc.group():  # from now on alice's new leases are counted in the call
        svc.acquire("alice", "c")
        with pytest.raises(QuotaExceeded) as over:
            svc.acquire("alice", "d")  # a and c: no room
        svc.acquire("bob", "z")
    assert over.value.current == 2
    assert sorted(lease.key for lease in svc.list()) == ["a", "c", "z"]
