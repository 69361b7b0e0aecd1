"""Fast groups on a real PostgreSQL (:mod:`tenure.store.postgres_cache`).

A group whose keys its thread committed last decides on the rows as it committed them and an
upper bound of the database's clock, in one round trip; that round trip locks the rows and
checks, before any write, that the rows are the versions remembered, that no principal or token
changed, and that no deadline lies between the database's clock and the instant the calls used.
If anything changed, nothing of the group happens and it runs again the ordinary way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from tenure import LeaseLost, Principal, Service
from tenure.errors import Unauthenticated
from tenure.principals import Principals
from tenure.server.executor import PgGroupExecutor
from tenure.store import postgres_cache, postgres_tx
from tenure.store.postgres import PostgresStore
from tenure.store.postgres_tx import Batch, GroupStale

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@pytest.fixture(autouse=True)
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a loaded machine (the suite's other workers, its chaos tests) a round trip may take
    long enough that the clock's sample is too old or too loose for the fast way, which then
    rightly goes the ordinary way; these tests are about the fast way, so they widen both."""
    monkeypatch.setattr(postgres_cache, "MAX_AGE_S", 60.0)
    monkeypatch.setattr(postgres_cache, "SLACK_MS", 5_000)


@pytest.fixture
def other(pg: PostgresStore) -> Service:
    """Another server on the same database."""
    store = PostgresStore(pg.url)
    yield Service(store)
    store.close()


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The batches sent, each as the names of its statements."""
    sent: list[list[str]] = []
    run = postgres_tx.Batch._run

    def counted(self: postgres_tx.Batch) -> Any:
        names = [s.split("(")[0].removeprefix("EXECUTE tenure_") for s in self._sql]
        sent.append(names)
        return run(self)

    monkeypatch.setattr(postgres_tx.Batch, "_run", counted)
    return sent


def held(pg: PostgresStore, svc: Service, keys: list[str], who: str = "alice") -> dict[str, int]:
    """``keys`` acquired by ``who`` in a group of this thread (which remembers the rows)."""
    with pg.group(keys):
        leases = {k: svc.acquire(who, k, ttl_ms=60_000) for k in keys}
    return {k: lease.token for k, lease in leases.items()}


def test_a_group_on_rows_its_thread_committed_last_is_one_round_trip(
    pg: PostgresStore, round_trips: list[list[str]]
) -> None:
    svc = Service(pg)
    tokens = held(pg, svc, ["a", "b"])
    assert len(round_trips) >= 2  # the rows were new: the ordinary way
    round_trips.clear()
    before = pg.now_ms()
    with pg.group(["b", "a"]):
        renewed = [svc.renew("alice", k, tokens[k], ttl_ms=90_000) for k in ("a", "b")]
    after = pg.now_ms()
    assert len(round_trips) == 1, round_trips
    assert round_trips[0] == ["BEGIN", "lock_keys", "check_group", "save_leases", "COMMIT"]
    assert pg.memory().fast == 1
    for lease, key in zip(renewed, ("a", "b"), strict=True):
        row = pg.get(key)
        assert row is not None and row.renewals == 1 and row.token == tokens[key]
        assert row.renewed_at == lease.renewed_at
        # the instant used is an upper bound of the database's clock at the lock: no earlier
        # than the clock before the group, never far ahead of the clock after it
        assert before <= row.renewed_at <= after + postgres_cache.SLACK_MS
        assert row.expires_at == row.renewed_at + 90_000


def test_a_row_another_server_wrote_since_makes_the_group_stale_and_nothing_happens(
    pg: PostgresStore, other: Service
) -> None:
    """Without the check the renewal below would succeed on the row as remembered and write
    over the release of the other server."""
    svc = Service(pg)
    token = held(pg, svc, ["k"])["k"]
    other.release("alice", "k", token)
    with pytest.raises(GroupStale), pg.group(["k"]):
        assert svc.renew("alice", "k", token).token == token  # decided on the old row
    row = pg.get("k")
    assert row is not None and row.ended == "released" and row.renewals == 0
    assert pg.memory().stale == 1 and "k" not in pg.memory().rows
    with pytest.raises(LeaseLost), pg.group(["k"]):  # the ordinary way reads the row
        svc.renew("alice", "k", token)


def test_a_principal_or_token_changed_since_makes_the_group_stale(
    pg: PostgresStore, other: Service
) -> None:
    svc = Service(pg)
    token = held(pg, svc, ["k"])["k"]
    Principals(other.store).bootstrap("bob", "service")  # the auth version moves
    with pytest.raises(GroupStale), pg.group(["k"]):
        svc.renew("alice", "k", token)
    assert pg.get("k").renewals == 0  # type: ignore[union-attr]


def test_the_executor_runs_a_stale_group_again_the_ordinary_way(
    pg: PostgresStore, other: Service, round_trips: list[list[str]]
) -> None:
    svc = Service(pg)
    executor = PgGroupExecutor(svc)

    async def main() -> tuple[Any, Any]:
        first = await executor.run(lambda: svc.acquire("alice", "k", ttl_ms=60_000), "k")
        other.release("alice", "k", first.token)  # behind the group thread's back
        round_trips.clear()
        try:
            await executor.run(lambda: svc.renew("alice", "k", first.token), "k")
        except LeaseLost as lost:
            return first, lost
        raise AssertionError("the renewal of a released lease succeeded")

    try:
        first, lost = asyncio.run(main())
    finally:
        executor.close()
    assert lost.token == first.token
    assert [b[1:3] for b in round_trips[:2]] == [
        ["lock_keys", "check_group"],  # the fast group: its check failed
        ["auth_version", "lock_leases"],  # again, the ordinary way
    ]
    assert pg.get("k").renewals == 0  # type: ignore[union-attr]


def test_a_revoked_token_is_refused_by_the_next_fast_group(pg: PostgresStore) -> None:
    svc = Service(pg)
    principals = Principals(pg)
    issued = principals.bootstrap("alice", "service")
    executor = PgGroupExecutor(svc)

    def acquire() -> Any:
        who = executor.principal(issued.token, lambda: principals.authenticate(issued.token))
        return svc.acquire(who, "k", ttl_ms=60_000)

    async def main() -> Any:
        await executor.run(acquire, "k")
        await executor.run(acquire, "k")  # fast: the row is remembered, the token known
        principals.revoke(Principal("root", roles=("admin",)), "alice", issued.token_id)
        return await executor.run(acquire, "k")

    try:
        with pytest.raises(Unauthenticated):
            asyncio.run(main())
    finally:
        executor.close()
    assert pg.get("k").renewals == 1  # type: ignore[union-attr]


def check(pg: PostgresStore, **changes: Any) -> tuple[bool, bool, int | None]:
    """Run ``lock_keys`` and ``check_group`` on key ``k`` (rolled back): whether the check
    passed, whether a failure was the check's, and the clock it read. By default every
    condition holds: the row's version and the auth version as they are, the instant 500 ms
    ahead of the clock read just before (within a slack of 1 s), the deadline after it."""
    t0 = pg.now_ms()
    row = pg._one("SELECT xmin::text FROM tenure_leases WHERE key = 'k'", {})
    assert row is not None
    params: dict[str, Any] = {
        "keys": ["k"],
        "xmins": [row[0]],
        "deadlines": [t0 + 10_000],
        "now": t0 + 500,
        "auth": pg.auth_version(),
        "slack": 1_000,
    }
    for name, change in changes.items():
        params[name] = change(t0) if callable(change) else change
    with pg.pool.connection() as conn:
        batch = Batch(conn)
        batch.add_sql("BEGIN")
        batch.add("lock_keys", {"keys": params["keys"]})
        batch.add_check(params)
        try:
            batch.send()
            passed = True
        except psycopg.errors.DivisionByZero:
            passed = False
        finally:
            conn.rollback()
    clock = batch.checked[0] if batch.checked else None
    if passed:
        assert clock is not None and t0 <= clock <= params["now"]
    return passed, batch.stale, clock


def test_the_check_holds_only_if_everything_the_group_relied_on_does(pg: PostgresStore) -> None:
    svc = Service(pg)
    svc.acquire("alice", "k", ttl_ms=60_000)
    assert check(pg)[:2] == (True, False)
    # a deadline already passed at the clock: the lease was over either way
    assert check(pg, deadlines=lambda t0: [t0 - 1])[:2] == (True, False)
    failures = {
        # a deadline between the clock and the instant used: live at one, over at the other
        "deadline": check(pg, deadlines=lambda t0: [t0 + 500]),
        "instant behind the clock": check(pg, now=lambda t0: t0 - 1_000),
        "instant too far ahead": check(pg, slack=20),
        "another version of the row": check(pg, xmins=["1"]),
        "another auth version": check(pg, auth=-1),
        "a row that is not there": check(pg, keys=["nobody"], xmins=["1"]),
    }
    assert {why: got[:2] for why, got in failures.items()} == dict.fromkeys(failures, (False, True))
