"""Subtree leases: a lease with scope ``subtree`` on a key ending in ``/`` holds every key under
it. It conflicts with a live lease on any key under it and with a live subtree lease above it;
a plain key conflicts with a live subtree lease above it. Leases of one principal and session
never block each other this way; another session of the same principal is a stranger. The
refusal names the blocking lease (invariant 8), and tokens stay per key (invariant 2)."""

from __future__ import annotations

from typing import Any

import pytest

import tenure
from tenure import InvalidRequest, LeaseHeld, Service
from tenure.core.models import Principal
from tenure.store.postgres.store import PostgresStore


def subtree(service: Service, who: str, key: str, **kw: Any) -> tenure.Lease:
    return service.acquire(who, key, scope="subtree", **kw)


def refused(service: Service, who: str, key: str, **kw: Any) -> LeaseHeld:
    with pytest.raises(LeaseHeld) as caught:
        service.acquire(who, key, **kw)
    return caught.value


def test_a_subtree_blocks_every_key_under_it_and_names_itself(service: Service) -> None:
    held = subtree(service, "jo", "src/billing/", task="refactor", ttl_ms=60_000, session="w1")
    assert held.scope == "subtree" and held.to_dict()["scope"] == "subtree"
    for key in ("src/billing/a.py", "src/billing/deep/er/b.py", "src/billing/x/"):
        err = refused(service, "bo", key)
        assert err.key == key
        assert err.held_key == "src/billing/"
        assert (err.holder, err.session, err.task) == ("jo", "w1", "refactor")
        assert (err.expires_at, err.token, err.scope) == (held.expires_at, held.token, "subtree")
        assert err.to_problem()["held_key"] == "src/billing/"
    assert service.list(prefix="src/") == [held]  # nothing was granted under it


def test_subtrees_above_and_below_a_subtree_are_refused(service: Service) -> None:
    subtree(service, "jo", "a/b/")
    assert refused(service, "bo", "a/", scope="subtree").held_key == "a/b/"
    assert refused(service, "bo", "a/b/c/", scope="subtree").held_key == "a/b/"
    assert refused(service, "bo", "a/b/", scope="subtree").held_key == "a/b/"
    assert refused(service, "bo", "a/b/").held_key == "a/b/"  # the key itself, plain


def test_a_plain_key_blocks_a_subtree_above_it(service: Service) -> None:
    plain = service.acquire("bo", "a/b/c/d.txt", task="edit", session="s")
    for prefix in ("a/", "a/b/", "a/b/c/"):
        err = refused(service, "jo", prefix, scope="subtree")
        assert err.key == prefix and err.held_key == "a/b/c/d.txt"
        assert (err.holder, err.session, err.task, err.scope) == ("bo", "s", "edit", "key")
        assert err.token == plain.token and err.expires_at == plain.expires_at


def test_a_subtree_refused_names_the_lease_under_it_that_lapses_last(service: Service) -> None:
    # the subtree is free no sooner than its last lease under it lapses (ties: the smaller key)
    service.acquire("jo", "t/b/", ttl_ms=30_000, task="first")
    late = service.acquire("jo", "t/b/c", ttl_ms=600_000)
    service.acquire("jo", "t/a", ttl_ms=30_000)
    with pytest.raises(LeaseHeld) as refused:
        service.acquire("bo", "t/", scope="subtree")
    assert (refused.value.held_key, refused.value.expires_at) == ("t/b/c", late.expires_at)


def test_prefix_siblings_are_not_under(service: Service) -> None:
    subtree(service, "jo", "a/b/")
    assert service.acquire("bo", "a/bc").holder == "bo"
    assert service.acquire("bo", "a/bc/d").holder == "bo"
    assert service.acquire("bo", "a/b").holder == "bo"  # no slash: another key
    assert subtree(service, "bo", "a/c/").holder == "bo"
    assert subtree(service, "bo", "b/").holder == "bo"


def test_no_conflict_with_yourself(service: Service) -> None:
    top = subtree(service, "jo", "src/", session="w")
    inner = service.acquire("jo", "src/a.py", session="w")
    deeper = subtree(service, "jo", "src/lib/", session="w")
    assert {inner.holder, deeper.holder} == {"jo"}
    # the other way round: holding a key first, then the subtree above it
    service.acquire("bo", "docs/x.md", session="w")
    assert subtree(service, "bo", "docs/", session="w").scope == "subtree"
    # re-acquiring your own subtree renews it (same token)
    again = subtree(service, "jo", "src/", session="w")
    assert again.token == top.token and again.renewals == 1


def test_another_session_of_the_same_principal_is_a_stranger(service: Service) -> None:
    subtree(service, "jo", "src/", session="w1")
    err = refused(service, "jo", "src/a.py", session="w2")
    assert (err.held_key, err.holder, err.session) == ("src/", "jo", "w1")
    service.acquire("jo", "lib/a.py", session="w1")
    assert refused(service, "jo", "lib/", scope="subtree", session="w2").held_key == "lib/a.py"


def test_an_expired_subtree_frees_the_keys_under_it_at_once(
    service: Service, clock: tenure.FakeClock
) -> None:
    subtree(service, "jo", "a/", ttl_ms=2_000)
    refused(service, "bo", "a/x")
    clock.advance(2_000)  # its deadline: not live, whether or not the reaper ran
    assert service.acquire("bo", "a/x").holder == "bo"


def test_a_released_subtree_frees_the_keys_under_it_at_once(service: Service) -> None:
    held = subtree(service, "jo", "a/")
    refused(service, "bo", "a/x")
    assert service.release("jo", "a/").released
    assert service.acquire("bo", "a/x").holder == "bo"
    # and a subtree waits for nothing more once the key under it is released
    assert service.release("bo", "a/x").released
    again = subtree(service, "bo", "a/")
    assert again.token > held.token


def test_a_force_released_subtree_frees_the_keys_under_it(service: Service) -> None:
    subtree(service, "jo", "a/")
    service.force_release(Principal("root", roles=("admin",)), "a/", reason="stuck")
    assert service.acquire("bo", "a/x").holder == "bo"


def test_tokens_per_key_only_grow(service: Service) -> None:
    seen: dict[str, int] = {}
    for round_ in range(3):
        for key, scope in (("t/", "subtree"), ("t/a", "key"), ("t/b/", "subtree"), ("t/", "key")):
            who = f"p{round_}"
            lease = service.acquire(who, key, scope=scope)
            assert lease.token > seen.get(key, 0)
            seen[key] = lease.token
            service.release(who, key)


def test_renew_extend_and_release_of_a_subtree_are_by_its_key(service: Service) -> None:
    held = subtree(service, "jo", "a/", ttl_ms=5_000)
    renewed = service.renew("jo", "a/", held.token)
    assert renewed.scope == "subtree" and renewed.token == held.token
    extended = service.extend("jo", "a/", held.token, by_ms=60_000)
    assert extended.lease.scope == "subtree"
    refused(service, "bo", "a/z")
    assert service.release("jo", "a/", held.token).released


def test_a_subtree_on_a_key_without_a_slash_at_the_end_changes_nothing(
    service: Service,
) -> None:
    for key in ("a", "a/b", "a/b/c.py"):
        with pytest.raises(InvalidRequest) as caught:
            subtree(service, "jo", key)
        assert caught.value.field == "scope" and caught.value.status == 422
    with pytest.raises(InvalidRequest) as caught:
        service.acquire("jo", "a/", scope="tree")
    assert caught.value.field == "scope"
    assert service.list() == [] and service.events() == []


def test_item_keys_refuse_subtrees(service: Service) -> None:
    with pytest.raises(InvalidRequest) as caught:
        subtree(service, "jo", "items/")
    assert caught.value.field == "key"
    with pytest.raises(InvalidRequest):
        subtree(service, "jo", "items/abc/")
    assert service.list() == []


def test_the_refusal_is_recorded_as_a_conflict_naming_the_held_key(service: Service) -> None:
    held = subtree(service, "jo", "a/", task="t")
    refused(service, "bo", "a/x", task="want")
    (event,) = service.events(type="conflict")
    assert (event.key, event.holder, event.task, event.token) == ("a/x", "jo", "t", held.token)
    assert event.data["held_key"] == "a/"


def test_upgrading_your_own_key_to_a_subtree_checks_the_keys_under_it(
    service: Service,
) -> None:
    mine = service.acquire("jo", "a/")
    service.acquire("bo", "a/x")
    assert refused(service, "jo", "a/", scope="subtree").held_key == "a/x"
    assert service.get("a/").scope == "key"  # unchanged
    service.release("bo", "a/x")
    up = subtree(service, "jo", "a/")
    # a new token: a subtree's token is above every token granted under it (a/x had 1)
    assert (up.token, up.scope) == (mine.token + 1, "subtree")


def test_a_group_sees_what_it_granted_itself(service: Service) -> None:
    """Calls of one group commit (the server's) decide on what the calls before them wrote."""
    with service.group():
        service.acquire("bo", "g/a/b")
        with pytest.raises(LeaseHeld) as first:
            subtree(service, "jo", "g/a/")
        subtree(service, "jo", "h/")
        with pytest.raises(LeaseHeld) as second:
            service.acquire("bo", "h/x")
        service.release("jo", "h/")
        service.acquire("bo", "h/y")
    assert first.value.held_key == "g/a/b" and second.value.held_key == "h/"
    assert [lease.key for lease in service.list()] == ["g/a/b", "h/y"]


def test_a_group_that_locked_its_keys_ahead_decides_alike(service: Service) -> None:
    """The server's group commit on PostgreSQL locks its calls' keys (and their prefixes) in
    its first round trip and reads the subtrees above them there: the same decisions."""
    keys = ["g/a/b", "g/a/", "h/", "h/x", "h/y", "k/1", "k/"]
    service.acquire("bo", "k/1")  # a key under a subtree asked in the group
    store = service.store
    ahead = store.group(keys) if isinstance(store, PostgresStore) else service.group()
    with ahead:
        service.acquire("bo", "g/a/b")
        with pytest.raises(LeaseHeld) as first:
            subtree(service, "jo", "g/a/")
        subtree(service, "jo", "h/")
        with pytest.raises(LeaseHeld) as second:
            service.acquire("bo", "h/x")
        service.release("jo", "h/")
        service.acquire("bo", "h/y")
        with pytest.raises(LeaseHeld) as third:
            subtree(service, "jo", "k/")
        service.release("bo", "k/1")
        subtree(service, "jo", "k/")
    assert first.value.held_key == "g/a/b" and second.value.held_key == "h/"
    assert third.value.held_key == "k/1"
    assert [lease.key for lease in service.list()] == ["g/a/b", "h/y", "k/"]
