"""Invariant 2: tokens only grow, across every way a lease ends and across restarts."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import pytest

import tenure
from tenure import LeaseHeld, Service
from tenure.core.models import EventDraft, FencedWrite


def test_renewals_keep_the_token_and_acquisitions_raise_it(
    service: Service, clock: tenure.FakeClock
) -> None:
    assert service.acquire("alice", "k", ttl_ms=5_000).token == 1
    clock.advance(1_000)
    assert service.renew("alice", "k", 1).token == 1
    assert service.acquire("alice", "k", ttl_ms=5_000).token == 1
    assert service.extend("alice", "k", 1, by_ms=60_000).lease.token == 1
    assert service.release("alice", "k", 1).released
    assert service.acquire("alice", "k").token == 2


def test_tokens_grow_across_release_expiry_and_force_release(
    service: Service, clock: tenure.FakeClock
) -> None:
    tokens = [service.acquire("alice", "k", ttl_ms=1_000).token]
    service.release("alice", "k")
    tokens.append(service.acquire("bob", "k", ttl_ms=1_000).token)
    clock.advance(1_000)  # bob's lease lapses; nobody reaps
    tokens.append(service.acquire("carol", "k", ttl_ms=1_000).token)
    admin = tenure.Principal("root", roles=("admin",))
    service.force_release(admin, "k", reason="stuck")
    tokens.append(service.acquire("alice", "k", ttl_ms=1_000).token)
    clock.advance(5_000)
    service.reap()  # expiry recorded by the reaper this time
    tokens.append(service.acquire("bob", "k", ttl_ms=1_000).token)
    assert tokens == [1, 2, 3, 4, 5]
    acquired = [e.token for e in service.events(key="k", type="acquired")]
    assert acquired == tokens


def test_tokens_are_counted_per_key(service: Service) -> None:
    assert service.acquire("alice", "k1").token == 1
    service.release("alice", "k1")
    assert service.acquire("alice", "k1").token == 2
    assert service.acquire("alice", "k2").token == 1


def test_tokens_survive_a_restart(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    first = make_store()
    service = Service(first)
    service.acquire("alice", "k", ttl_ms=1_000)
    service.release("alice", "k")
    service.acquire("bob", "k", ttl_ms=1_000)
    first.close()  # the server stops, its lease lapses while it is down
    clock.advance(60_000)
    again = Service(make_store())
    assert again.get("k").token == 2
    assert again.get("k").state == "expired"
    assert again.acquire("carol", "k").token == 3


def test_tokens_survive_a_restart_without_a_clean_close(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    # The first store is never closed before the second opens (a killed server's files).
    old = Service(make_store())
    old.acquire("alice", "k", ttl_ms=1_000)
    clock.advance(1_000)
    new = Service(make_store())
    assert new.acquire("bob", "k").token == 2


def test_several_instances_sharing_a_database_never_issue_a_token_twice(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    services = [Service(make_store()), Service(make_store())]
    rounds, workers = 15, 4
    barrier = threading.Barrier(workers)
    granted: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def churn(i: int) -> None:
        svc = services[i % 2]
        barrier.wait()
        try:
            for _ in range(rounds):
                try:
                    lease = svc.acquire(f"w{i}", "hot", ttl_ms=60_000)
                except LeaseHeld:
                    continue
                with lock:
                    granted.append(lease.token)
                assert svc.release(f"w{i}", "hot", lease.token).released
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert granted, "nobody ever acquired the key"
    assert len(granted) == len(set(granted)), "a token was issued twice"
    assert sorted(granted) == list(range(1, len(granted) + 1))
    # In the event log (commit order), tokens strictly grow.
    acquired = [e.token for e in services[0].events(key="hot", type="acquired", limit=1000)]
    assert acquired == sorted(granted)


@pytest.mark.parametrize("ending", ["released", "expired", "force_released"])
def test_a_new_acquisition_after_any_ending_gets_a_larger_token(
    service: Service, clock: tenure.FakeClock, ending: str
) -> None:
    old = service.acquire("alice", "k", ttl_ms=1_000)
    if ending == "released":
        service.release("alice", "k", old.token)
    elif ending == "expired":
        clock.advance(1_000)
    else:
        service.force_release(tenure.Principal("root", roles=("admin",)), "k", reason="r")
    new = service.acquire("alice", "k")
    assert new.token == old.token + 1
    assert service.get("k").token == new.token


def test_the_store_refuses_to_lower_a_token_and_undoes_the_whole_transaction(
    service: Service,
) -> None:
    """Whatever a caller computed, the store never writes a smaller token: the save fails (on
    PostgreSQL in the server, since it is sent with the COMMIT) and nothing of the
    transaction stands, neither the fenced write before it nor the event after it."""
    lease = service.acquire("alice", "k", ttl_ms=10_000)
    service.write("alice", "k", lease.token, "v1")
    before = service.events()
    with pytest.raises(RuntimeError, match="lower the token"), service.store.key_tx("k") as tx:
        assert tx.record is not None
        tx.save_register(FencedWrite("k", lease.token, "v2", 2), None)
        tx.save(dataclasses.replace(tx.record, token=lease.token - 1, holder="mallory"))
        tx.append([EventDraft("acquired", "k", holder="mallory", token=lease.token - 1)])
    after = service.get("k")
    assert (after.token, after.holder, after.state) == (lease.token, "alice", "live")
    assert service.read("k").value == "v1"
    assert service.events() == before
    assert service.renew("alice", "k", lease.token).token == lease.token  # the store works on
