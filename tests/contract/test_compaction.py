"""Compaction: what retention deletes, and every guarantee it keeps. Tokens only grow (a key
whose row was deleted gets a larger token than any it ever had), the fenced register refuses
old tokens without the lease row, live and lapsed-unrecorded leases, item claims and keys within
the retention stay, op_ids are answered within their window, all-time counts survive, retired
agents go without breaking their dispatcher's views; bad input changes nothing."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

import tenure
from tenure import InvalidRequest, Service, StaleToken
from tenure.core.compaction import CompactionResult
from tenure.core.policy import DAY, HOUR, Policy, PolicySet
from tenure.errors import Conflict, Forbidden
from tenure.service.compaction import Ages
from tenure.service.token_floors import show_floor

from ._items import ADMIN, ALICE, BOB, org

WEEK = 7 * DAY
#: leases that may live through an op window
LONG = PolicySet(Policy(max_ttl=2 * DAY, max_lease=3 * DAY))


def churn(service: Service, key: str, times: int) -> int:
    """Acquire and release ``key`` ``times`` times; its last token."""
    token = 0
    for _ in range(times):
        token = service.acquire("alice", key).token
        service.release("alice", key, token)
    return token


def compact_all(service: Service, **ages: int | None) -> CompactionResult:
    return service.compact(batch=2, max_batches=1000, ages=Ages(**ages))


def test_a_deleted_idle_key_acquired_again_gets_a_larger_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    last = {key: churn(service, key, n) for key, n in (("a", 3), ("b", 7), ("c", 1))}
    clock.advance(WEEK + 60_000)
    done = compact_all(service)
    assert (done.leases, done.retired_token, done.complete) == (3, 7, True)
    assert [service.store.get(k) for k in last] == [None, None, None]  # the rows are gone
    for key, token in last.items():
        assert service.acquire("bob", key).token > max(token, 7)
    # the largest token ever granted stays truthful; the floor the admin set is untouched
    assert show_floor(service.store, None).to_dict() == {"floor": 0, "max_token": 8}


def test_what_is_kept(service: Service, clock: tenure.FakeClock) -> None:
    churn(service, "old", 2)
    clock.advance(WEEK + 60_000)
    churn(service, "recent", 4)  # ended within the retention
    service.acquire("alice", "live", ttl_ms=600_000)
    service.acquire("alice", "lapsed", ttl_ms=1_000)
    clock.advance(60_000)  # "lapsed" lapses; nobody records its ending
    done = compact_all(service)
    assert done.leases == 1
    assert service.store.get("old") is None
    assert service.store.get("recent") is not None
    assert service.acquire("bob", "recent").token == 5
    # even with no retention at all, what is live or not yet recorded stays
    assert compact_all(service, lease_ms=0).leases == 0
    assert service.get("live").state == "live"
    assert service.store.get("lapsed") is not None


def test_item_claims_are_kept_with_their_items(svc: Service, clock: tenure.FakeClock) -> None:
    claim = svc.items.claim(ALICE, "job")
    svc.items.release(ALICE, "job", claim.lease.token)
    clock.advance(2 * WEEK)
    assert compact_all(svc).leases == 0
    again = svc.items.claim(BOB, "job")
    assert again.lease.token == claim.lease.token + 1
    assert svc.items.get("job").item.epoch == again.lease.token


def test_the_register_refuses_old_tokens_once_the_lease_row_is_gone(
    service: Service, clock: tenure.FakeClock
) -> None:
    token = service.acquire("alice", "reg").token
    service.write("alice", "reg", token, {"v": 1})
    service.release("alice", "reg", token)
    clock.advance(WEEK + 60_000)
    assert compact_all(service).leases == 1
    assert service.store.get("reg") is None
    assert service.read("reg").value == {"v": 1}  # the value itself is kept
    with pytest.raises(StaleToken):
        service.write("alice", "reg", token, {"v": 2})
    newer = service.acquire("bob", "reg").token
    assert newer > token
    with pytest.raises(StaleToken):
        service.write("alice", "reg", token, {"v": 3})
    assert service.write("bob", "reg", newer, {"v": 4}).version == 2
    assert service.read("reg").value == {"v": 4}


def test_a_retry_within_the_window_is_a_duplicate_and_past_it_the_op_is_gone(
    make_service: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    service = make_service(policy=LONG)
    token = service.acquire("alice", "k", ttl_ms=2 * DAY).token
    first = service.write("alice", "k", token, "one", op_id="op-1")
    clock.advance(HOUR)
    assert compact_all(service).fenced_ops == 0
    again = service.write("alice", "k", token, "one", op_id="op-1")
    assert again.duplicate and again.version == first.version
    clock.advance(DAY)
    assert compact_all(service).fenced_ops == 1
    past = service.write("alice", "k", token, "one", op_id="op-1")  # applied again
    assert not past.duplicate and past.version == first.version + 1


def test_item_ops_past_the_window_are_deleted(svc: Service, clock: tenure.FakeClock) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    done = svc.items.complete(ALICE, "job", epoch, result="ok", op_id="c-1")
    clock.advance(HOUR)
    assert compact_all(svc).item_ops == 0
    assert svc.items.complete(ALICE, "job", epoch, result="ok", op_id="c-1").duplicate
    clock.advance(DAY)
    assert compact_all(svc).item_ops == 1
    assert svc.items.get("job").item.result == done.item.result
    with pytest.raises(Conflict):  # past the window: a completion of a done item
        svc.items.complete(ALICE, "job", epoch, result="ok", op_id="c-1")


def test_per_prefix_ages_from_the_policy(make_service: Callable[..., Service], clock) -> None:
    policy = LONG.with_prefix("tmp/", lease_retention=HOUR, op_window=60_000)
    service = make_service(policy=policy)
    churn(service, "tmp/x", 2)
    churn(service, "keep/x", 2)
    for key in ("tmp/w", "keep/w"):
        token = service.acquire("alice", key, ttl_ms=DAY).token
        service.write("alice", key, token, 1, op_id="o")
    clock.advance(2 * HOUR)
    done = compact_all(service)
    assert (done.leases, done.fenced_ops) == (1, 1)
    assert service.store.get("tmp/x") is None and service.store.get("keep/x") is not None


def test_stats_and_totals_are_unchanged_by_compaction(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "hot", ttl_ms=1_000)
    for _ in range(3):
        with pytest.raises(tenure.LeaseHeld):
            service.acquire("bob", "hot")
    service.release("alice", "hot", 1)
    churn(service, "k", 3)
    before = service.stats()
    conflicts = service.store.conflict_total()
    clock.advance(31 * DAY)
    done = compact_all(service)
    assert done.leases == 2 and done.events > 0
    assert service.store.conflict_total() == conflicts == 3
    after = service.stats()
    for kind in ("endings", "acquisitions", "conflicts"):
        assert after[kind] == before[kind]
    assert before["endings"]["released"] == 4 and before["conflicts"] == 3


def test_retired_agents_go_and_the_dispatchers_views_stay(
    svc: Service, clock: tenure.FakeClock
) -> None:
    sent = svc.items.dispatch(ALICE, "job", agent="r1")
    svc.items.complete(sent.agent, "job", sent.lease.token, result="done")
    svc.revoke_ended_agents()
    assert compact_all(svc).agents == 0  # within the grace period
    clock.advance(DAY + 60_000)
    done = compact_all(svc)
    assert done.agents == 1
    assert svc.store.get_principal("alice/r1") is None
    assert svc.items.queue("alice") == []
    assert svc.items.briefing(ALICE) is not None
    # the item's history and the log keep the name
    transfers = svc.items.get("job").transfers
    assert ("alice/r1", "completed") in [(t.from_, t.reason) for t in transfers]
    assert [e.holder for e in svc.events(type="released")] == ["alice/r1"]
    removed = svc.events(type="principal_removed")
    assert [(e.holder, e.reason) for e in removed] == [("alice/r1", "retired")]


def test_an_agent_still_assigned_open_work_is_not_retired(
    svc: Service, clock: tenure.FakeClock
) -> None:
    svc.items.dispatch(ALICE, "job", agent="r1", ttl_ms=5_000)
    clock.advance(10_000)  # its claim lapses (its supervisor died): the item stays assigned
    svc.reap()
    assert len(svc.revoke_ended_agents()) == 1
    clock.advance(2 * DAY)
    assert compact_all(svc).agents == 0
    assert svc.store.get_principal("alice/r1") is not None
    assert [v.item.id for v in svc.items.queue("alice")] == ["job"]


@pytest.mark.parametrize(
    ("batch", "max_batches", "ages", "field"),
    [
        (0, 1, Ages(), "batch"),
        (-5, 1, Ages(), "batch"),
        (10**9, 1, Ages(), "batch"),
        ("10", 1, Ages(), "batch"),
        (10, 0, Ages(), "max_batches"),
        (10, 1, Ages(lease_ms=-1), "lease_ms"),
        (10, 1, Ages(op_ms=True), "op_ms"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    service: Service, clock: tenure.FakeClock, batch, max_batches, ages, field
) -> None:
    churn(service, "k", 2)
    clock.advance(WEEK + 60_000)
    with pytest.raises(InvalidRequest) as refused:
        service.compact(batch, max_batches, ages=ages)
    assert refused.value.field == field
    assert service.store.get("k") is not None


def test_only_admins_compact(make_service: Callable[..., Service], clock) -> None:
    service = org(make_service)
    churn(service, "k", 2)
    clock.advance(WEEK + 60_000)
    with pytest.raises(Forbidden):
        service.compact(actor=ALICE)
    assert service.store.get("k") is not None
    assert service.compact(actor=ADMIN).leases == 1


def test_the_result_reads_back_from_its_wire_form(service: Service) -> None:
    done = service.compact()
    assert CompactionResult.from_wire(done.to_dict()) == done


def test_acquisitions_racing_the_deletion_of_their_key_get_one_new_larger_token(
    service: Service, clock: tenure.FakeClock, store_url: str
) -> None:
    """Two acquisitions of a key whose row a compaction holds and deletes: they wait for it,
    then one gets a token above the deleted one and the other is refused (no token twice)."""
    old = churn(service, "k", 3)
    clock.advance(WEEK + 60_000)
    got: list[object] = []

    def acquire(who: str) -> None:
        try:
            got.append(service.acquire(who, "k").token)
        except tenure.LeaseHeld as held:
            got.append(held)

    with _compaction_holding(store_url, "k") as delete:
        racers = [threading.Thread(target=acquire, args=(who,)) for who in ("bob", "carol")]
        for racer in racers:
            racer.start()
        time.sleep(0.5)  # both wait on the row (or on SQLite's write lock)
        delete()
    for racer in racers:
        racer.join(30)
    tokens = [t for t in got if isinstance(t, int)]
    assert len(got) == 2 and len(tokens) == 1 and tokens[0] > old
    assert service.get("k").token == tokens[0]


@contextlib.contextmanager
def _compaction_holding(url: str, key: str) -> Iterator[Callable[[], None]]:
    """What a compaction's transaction does, paused between taking ``key``'s row and deleting
    it: the caller's ``delete()`` deletes it, raises the retired mark, and commits."""
    delete_sql = "DELETE FROM tenure_leases WHERE key = {p}"
    raise_sql = "UPDATE tenure_token_floor SET retired = (SELECT 3)"
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://").removeprefix("/")
        lite = sqlite3.connect(path, isolation_level=None)
        lite.execute("BEGIN IMMEDIATE")
        lite.execute("SELECT token FROM tenure_leases WHERE key = ?", (key,))

        def done_lite() -> None:
            lite.execute(delete_sql.format(p="?"), (key,))
            lite.execute(raise_sql)
            lite.execute("COMMIT")

        try:
            yield done_lite
        finally:
            lite.close()
        return
    with psycopg.connect(url) as pg:
        pg.execute("SELECT token FROM tenure_leases WHERE key = %s FOR UPDATE", (key,))

        def done_pg() -> None:
            pg.execute(delete_sql.format(p="%s"), (key,))  # type: ignore[arg-type]
            pg.execute(raise_sql)
            pg.commit()

        yield done_pg


def test_a_retired_agents_name_is_never_given_to_a_later_agent(
    svc: Service, clock: tenure.FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with the same random bits (a collision), the next default name is another one."""
    monkeypatch.setattr("secrets.token_hex", lambda n=None: "ab" * (n or 16))
    first = svc.items.dispatch(ALICE, "job")
    svc.items.complete(first.agent, "job", first.lease.token, result="done")
    svc.revoke_ended_agents()
    clock.advance(DAY + 60_000)
    assert compact_all(svc).agents == 1
    assert svc.store.get_principal(first.agent.name) is None  # retired, its name free
    svc.items.create(ALICE, "next", id="next")
    second = svc.items.dispatch(ALICE, "next")
    assert second.agent.name != first.agent.name
    assert second.agent.name.startswith("alice/agent-")
    # every record names one agent: the first one's stay with the first item
    assert [e.data["agent"] for e in svc.events(type="dispatched")] == [
        first.agent.name,
        second.agent.name,
    ]
