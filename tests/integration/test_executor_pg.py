"""``PgGroupExecutor`` and ``PostgresStore.group`` on a real PostgreSQL.

The hot calls that queue while a group runs share one transaction: the keys they write are
locked ahead in the group's first round trip, each call sees what the ones before it wrote, a
call that fails fails alone, every reply leaves after the commit, and a group whose transaction
fails runs each of its calls again on its own.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tenure import LeaseHeld, NotHolder, Service, TenureError
from tenure.server.runtime.executor import PgGroupExecutor
from tenure.store.postgres import tx as postgres_tx
from tenure.store.postgres.store import PostgresStore

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The batches sent, each as the names of its statements."""
    sent: list[str] = []
    run = postgres_tx.Batch._run

    def counted(self: postgres_tx.Batch, *args: Any) -> Any:
        sent.append(" ".join(s.split("(")[0].removeprefix("EXECUTE tenure_") for s in self._sql))
        return run(self, *args)

    monkeypatch.setattr(postgres_tx.Batch, "_run", counted)
    return sent


async def in_one_group(
    executor: PgGroupExecutor, calls: list[tuple[Callable[[], Any], str]]
) -> list[Any]:
    """Run ``calls`` (with their keys) in one group: the group thread is kept busy for a
    moment first, so that they all queue and the next group takes them together."""
    started = threading.Event()

    def keep_busy() -> None:
        started.set()
        time.sleep(0.3)

    busy = executor.submit(keep_busy)
    assert started.wait(5)  # the group thread runs it: the calls below queue behind it
    queued = [executor.submit(call, key) for call, key in calls]
    await busy
    return await asyncio.gather(*queued, return_exceptions=True)


def test_a_group_of_calls_on_keys_locked_ahead_is_two_round_trips(
    pg: PostgresStore, round_trips: list[str]
) -> None:
    svc = Service(pg)
    for key in ("a", "b"):  # the rows exist (a new key costs its call a round trip)
        svc.release("p", key, svc.acquire("p", key).token)
    round_trips.clear()
    with pg.group(["b", "a", "b"]):
        a = svc.acquire("alice", "a", ttl_ms=5_000)
        with pytest.raises(LeaseHeld):
            svc.acquire("bob", "a")  # sees alice's acquire, not yet sent
        renewed = svc.renew("alice", "a", a.token)
        b = svc.acquire("bob", "b")
        assert pg.auth_version() >= 0  # read in the first round trip too
    assert len(round_trips) == 2, round_trips
    begin = ["BEGIN", "SET", "LOCAL", "plan_cache_mode", "=", "force_generic_plan"]
    assert round_trips[0].split() == [
        *begin,
        "auth_version",
        "lock_leases",
        "token_floor",
        "now_ms",
    ]
    # every lease the group saved in one statement, the events in order (a refusal is
    # recorded in its window, a statement of its own)
    events = ["insert_event", "record_conflict", "insert_event"]
    # the bound on live leases of each principal that got a new one, under its lock
    bounds = ["lock_principal_slots", "check_live_leases"] * 2  # alice, bob
    # then the notices, in a transaction of their own that does not wait for the disk
    notify = [*begin, "SET", "LOCAL", "synchronous_commit", "=", "off", "notify", "COMMIT"]
    commit = ["save_leases", *bounds, "announce_events", *events, "COMMIT", *notify]
    assert round_trips[1].split() == commit
    assert renewed.renewals == 1 and renewed.token == a.token
    other = Service(PostgresStore(pg.url))  # another connection: the commit is there
    try:
        assert other.get("a").holder == "alice" and other.get("b").holder == "bob"
        assert other.get("b").token == b.token
        events = [(e.type, e.key) for e in other.events() if e.holder in ("alice", "bob")]
        assert events == [("acquired", "a"), ("conflict", "a"), ("acquired", "b")]
    finally:
        other.store.close()


ODD = ["NULL", "null", 'a "quoted", {braced} value', "back\\slash", "it's", "ünï — ✓", ""]


def test_acquisitions_under_prefixes_in_a_group_read_no_grant_of_their_own(
    pg: PostgresStore, round_trips: list[str]
) -> None:
    """The subtree grants above the group's keys are read in its first round trip: an
    acquisition of a key under a prefix (a new token must pass the latest subtree token above
    it) costs its group no round trip more, and still passes that token."""
    svc = Service(pg)
    keys = ["t/a/1", "t/a/2", "plain"]
    for key in keys:  # the rows exist (a new key costs its call a round trip)
        svc.release("p", key, svc.acquire("p", key).token)
    sub = svc.acquire("p", "t/", scope="subtree")  # t/ granted a subtree token
    svc.release("p", "t/", sub.token)
    round_trips.clear()
    with pg.group(keys):
        got = [svc.acquire("alice", k, ttl_ms=5_000) for k in keys]
    assert len(round_trips) == 2, round_trips
    assert "subtree_grants_above" in round_trips[0].split()
    assert all(lease.token > sub.token for lease in got[:2])


def test_a_subtree_granted_in_the_group_is_read_again_by_the_calls_after_it(
    pg: PostgresStore,
) -> None:
    """A group that grants a subtree token reads the grants again for its later calls: a key
    under that subtree acquired in the same group gets a larger token than the subtree's."""
    svc = Service(pg)
    with pg.group(["u/", "u/x"]):
        sub = svc.acquire("p", "u/", scope="subtree")
        svc.release("p", "u/", sub.token)
        later = svc.acquire("alice", "u/x")
    assert later.token > sub.token


def test_the_statements_of_a_group_keep_every_string_as_it_was(pg: PostgresStore) -> None:
    """The group saves leases and events with arrays bound on the client: odd strings (the
    word NULL, quotes, braces, commas, backslashes, non-ASCII) come back exactly."""
    svc = Service(pg)
    with pg.group([f"odd/{i}" for i in range(len(ODD))]):
        for i, text in enumerate(ODD):
            svc.acquire(f"holder {text}", f"odd/{i}", task=text or None, meta={"v": text})
    for i, text in enumerate(ODD):
        record = svc.get(f"odd/{i}")
        assert (record.holder, record.task, record.meta) == (
            f"holder {text}",
            text or None,
            {"v": text},
        )
    events = [e for e in svc.events() if e.key and e.key.startswith("odd/")]
    assert [(e.key, e.holder, e.task) for e in events] == [
        (f"odd/{i}", f"holder {t}", t or None) for i, t in enumerate(ODD)
    ]


def test_a_call_that_fails_on_a_key_locked_ahead_is_undone_alone(pg: PostgresStore) -> None:
    svc = Service(pg)
    first = svc.acquire("alice", "k", ttl_ms=60_000)
    with pg.group(["k", "new"]):
        with pytest.raises(RuntimeError), pg.key_tx("k") as tx:
            assert tx.record is not None
            tx.save(tx.record.__class__(**{**tx.record.__dict__, "holder": "ghost"}))
            raise RuntimeError("a bug half-way through a write")
        with pytest.raises(RuntimeError), pg.key_tx("new", create=True):
            raise RuntimeError("a bug after the placeholder row was written")
        assert svc.renew("alice", "k", first.token).holder == "alice"  # what was before
        with pytest.raises(NotHolder):
            svc.renew("ghost", "k", first.token)
    assert svc.get("k").holder == "alice"
    assert pg.connector._one("SELECT count(*) FROM tenure_leases WHERE key = 'new'", {}) == (0,)


def test_calls_share_groups_and_each_gets_its_own_answer_after_the_commit(
    pg: PostgresStore,
) -> None:
    svc = Service(pg)
    groups: list[int] = []
    svc.listeners.append(lambda _events: groups.append(1))
    executor = PgGroupExecutor(svc)
    other = PostgresStore(pg.url)

    async def call(i: int) -> Any:
        key = "shared" if i % 2 else f"own-{i}"
        try:
            lease = await executor.run(lambda: svc.acquire(f"p{i}", key, ttl_ms=60_000), key)
        except LeaseHeld as held:
            return ("held", held.holder)
        record = other.get(key)  # the reply came after the commit: visible elsewhere
        assert record is not None and record.holder == f"p{i}"
        return ("won", lease.holder)

    async def main() -> list[Any]:
        return await asyncio.gather(*(call(i) for i in range(40)))

    try:
        outcomes = asyncio.run(main())
    finally:
        executor.close()
        other.close()
    won_shared = [o for i, o in enumerate(outcomes) if i % 2 and o[0] == "won"]
    assert len(won_shared) == 1
    winner = won_shared[0][1]
    assert all(o == ("held", winner) for i, o in enumerate(outcomes) if i % 2 and o[0] == "held")
    assert all(o == ("won", f"p{i}") for i, o in enumerate(outcomes) if i % 2 == 0)
    assert 1 <= len(groups) < 40  # the 40 calls shared commits


def test_a_lost_group_runs_each_call_again_alone(pg: PostgresStore) -> None:
    """A call whose write the database refuses (here: a token lowered, which save_lease turns
    into an error at the COMMIT) loses its group's transaction: every call runs again on its
    own, the good ones succeed and the bad one fails alone."""
    svc = Service(pg)
    held = svc.acquire("alice", "k", ttl_ms=60_000)
    executor = PgGroupExecutor(svc)

    def lower_the_token() -> None:
        with pg.key_tx("k") as tx:
            assert tx.record is not None
            tx.save(tx.record.__class__(**{**tx.record.__dict__, "token": 0}))

    calls = [
        (lambda: svc.acquire("bob", "b"), "b"),
        (lower_the_token, "k"),
        (lambda: svc.renew("alice", "k", held.token), "k"),
    ]
    try:
        b, lowered, renewed = asyncio.run(in_one_group(executor, calls))
    finally:
        executor.close()
    assert b.holder == "bob" and svc.get("b").holder == "bob"
    assert isinstance(lowered, RuntimeError) and "lower the token" in str(lowered)
    assert renewed.renewals == 1 and svc.get("k").token == held.token


def test_a_failing_call_fails_alone(pg: PostgresStore) -> None:
    svc = Service(pg)
    executor = PgGroupExecutor(svc)

    calls = [
        (lambda: svc.acquire("alice", "a"), "a"),
        (lambda: svc.acquire("alice", ""), ""),  # refused: bad key
        (lambda: svc.acquire("alice", "c"), "c"),
    ]
    try:
        a, bad, c = asyncio.run(in_one_group(executor, calls))
    finally:
        executor.close()
    assert isinstance(bad, TenureError)
    assert a.holder == c.holder == "alice"
    assert sorted(e.key or "" for e in svc.events()) == ["a", "c"]


def test_the_next_group_begins_as_its_calls_queued_without_waiting_for_the_loop(
    pg: PostgresStore,
) -> None:
    """The calls that queue while a group runs are the next group, begun by the group thread
    as soon as the first commits: the loop, busy (here: blocked) reading requests, only sends
    the replies. Each reply still leaves once its own group committed."""
    svc = Service(pg)
    executor = PgGroupExecutor(svc)
    began: dict[str, float] = {}

    def acquire(key: str, hold: float = 0.0) -> Any:
        began[key] = time.monotonic()
        time.sleep(hold)
        return svc.acquire("alice", key)

    async def main() -> tuple[float, list[Any]]:
        first = executor.submit(lambda: acquire("a", hold=0.2), "a")
        queued = [executor.submit(lambda k=k: acquire(k), k) for k in ("b", "c")]
        time.sleep(0.6)  # the loop is blocked: it answers nothing, starts nothing
        unblocked = time.monotonic()
        return unblocked, await asyncio.gather(first, *queued)

    try:
        unblocked, leases = asyncio.run(main())
    finally:
        executor.close()
    assert [lease.key for lease in leases] == ["a", "b", "c"]
    assert began["a"] < began["b"] < unblocked and began["c"] < unblocked
    assert all(svc.get(k).holder == "alice" for k in "abc")


def test_close_finishes_what_is_queued_then_refuses(pg: PostgresStore) -> None:
    svc = Service(pg)
    executor = PgGroupExecutor(svc)

    async def main() -> list[Any]:
        return await asyncio.gather(
            *(executor.run(lambda i=i: svc.acquire("p", f"k{i}"), f"k{i}") for i in range(10))
        )

    leases = asyncio.run(main())
    executor.close()
    assert [lease.key for lease in leases] == [f"k{i}" for i in range(10)]

    async def late() -> Any:
        return executor.submit(lambda: None)

    with pytest.raises(RuntimeError):
        asyncio.run(late())


def test_a_group_that_loses_its_connection_fails_its_calls_without_running_them_again(
    pg: PostgresStore,
) -> None:
    """Without a database each call alone would only wait for one again (the pool's timeout,
    one call after the other): the group's calls fail at once with the connection's error
    (the server's 503), and the next group works."""
    svc = Service(pg)
    executor = PgGroupExecutor(svc)
    runs: list[str] = []
    killer = psycopg.connect(pg.url, autocommit=True)

    def acquire(key: str) -> Any:
        runs.append(key)
        return svc.acquire("alice", key)

    def cut_the_connection() -> Any:
        runs.append("cut")
        group = pg.connector._local.group
        pid = group.batch.conn.info.backend_pid
        killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return None

    calls = [(lambda: acquire("a"), "a"), (cut_the_connection, "b"), (lambda: acquire("c"), "c")]
    try:
        outcomes = asyncio.run(in_one_group(executor, calls))
        assert runs == ["a", "cut", "c"]  # once each: nothing was run again
        assert all(isinstance(o, psycopg.OperationalError) for o in outcomes), outcomes
        assert pg.get("a") is None and pg.get("c") is None  # nothing of the group happened
        after = asyncio.run(executor.run(lambda: svc.acquire("alice", "d"), "d"))
        assert after.holder == "alice"
    finally:
        executor.close()
        killer.close()


def test_a_commit_whose_notices_fail_is_still_a_commit(pg: PostgresStore) -> None:
    """The notices go in a transaction of their own after the COMMIT: if that one fails (here
    a payload over PostgreSQL's limit), the commit before it stands, nothing is raised, and the
    connection is fit for the next transaction."""
    with pg.connector.pool.connection() as conn:
        batch = postgres_tx.Batch(conn)
        batch.add_sql("BEGIN")
        batch.add_sql("INSERT INTO tenure_cursors (principal, name, event_id) VALUES ('n', 'n', 7)")
        batch.notices = ["x" * 9000]
        batch.commit()
        assert conn.execute("SELECT 1").fetchone() == (1,)
    got = pg.connector._one("SELECT event_id FROM tenure_cursors WHERE principal = 'n'", {})
    assert got == (7,)
