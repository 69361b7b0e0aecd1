"""A subtree lease supersedes the older tokens under it: its token is above every token ever
granted on a key under it, a key under it acquired afterwards gets a token above it, and the
fenced register on a key under it refuses the older tokens (``409 stale_token``) and takes the
subtree holder's token. Item epochs are not affected."""

from __future__ import annotations

import pytest

import tenure
from tenure import NotHolder, Service, StaleToken


def test_a_lapsed_per_file_holder_is_stale_once_the_subtree_is_taken(
    service: Service, clock: tenure.FakeClock
) -> None:
    old = service.acquire("jo", "a/x", ttl_ms=1_000)
    service.write("jo", "a/x", old.token, "jo's first")
    clock.advance(2_000)  # jo's lease lapses; nobody acquired a/x since
    tree = service.acquire("bo", "a/", scope="subtree", ttl_ms=60_000)
    assert tree.token > old.token
    with pytest.raises(StaleToken) as caught:
        service.write("jo", "a/x", old.token, "jo's stale second")
    assert caught.value.current_token == tree.token
    assert service.read("a/x").value == "jo's first"


def test_the_subtree_holder_writes_the_keys_under_it(service: Service) -> None:
    service.acquire("jo", "a/x")
    service.release("jo", "a/x")
    tree = service.acquire("bo", "a/", scope="subtree")
    written = service.write("bo", "a/x", tree.token, "by the subtree")
    assert (written.token, written.version) == (tree.token, 1)
    written = service.write("bo", "a/b/y", tree.token, "deeper")  # a key never acquired
    assert service.read("a/b/y").value == "deeper"
    with pytest.raises(NotHolder):  # the current token, but only its holder writes
        service.write("jo", "a/x", tree.token, "not mine")


def test_a_key_acquired_after_the_subtree_lease_ended_writes(service: Service) -> None:
    tree = service.acquire("bo", "a/", scope="subtree")
    service.write("bo", "a/x", tree.token, "by the subtree")
    service.release("bo", "a/", tree.token)
    mine = service.acquire("jo", "a/x")
    assert mine.token > tree.token
    assert service.write("jo", "a/x", mine.token, "by jo").token == mine.token
    with pytest.raises(StaleToken):  # the subtree's token is older than jo's now
        service.write("bo", "a/x", tree.token, "late")


def test_a_subtree_token_is_above_every_token_ever_under_it(service: Service) -> None:
    for _ in range(3):
        lease = service.acquire("jo", "a/b/c")
        service.release("jo", "a/b/c", lease.token)
    assert lease.token == 3
    assert service.acquire("bo", "a/", scope="subtree").token == 4
    assert service.acquire("bo", "z/", scope="subtree").token == 1  # a tree of its own


def test_widening_a_key_to_a_subtree_gets_a_token_above_the_keys_under_it(
    service: Service,
) -> None:
    mine = service.acquire("jo", "a/")
    lease = service.acquire("bo", "a/x")
    service.release("bo", "a/x", lease.token)
    service.acquire("bo", "a/x")  # token 2 under a/
    service.release("bo", "a/x")
    wide = service.acquire("jo", "a/", scope="subtree")
    assert wide.scope == "subtree" and wide.token > 2 > mine.token
    # the old token's lease ended there, and the log says so (each token acquired ends once)
    ended = [e for e in service.events(key="a/") if e.type in ("released", "acquired")]
    assert [(e.type, e.token, e.reason) for e in ended[-2:]] == [
        ("released", mine.token, "widened to a subtree lease with a new token"),
        ("acquired", wide.token, None),
    ]
    with pytest.raises(StaleToken):
        service.write("jo", "a/", mine.token, "with the token before the widening")


def test_a_force_released_subtree_token_is_dead_under_it(service: Service) -> None:
    tree = service.acquire("bo", "a/", scope="subtree")
    service.force_release(tenure.Principal("boss", roles=("admin",)), "a/", "stuck")
    with pytest.raises(StaleToken):
        service.write("bo", "a/x", tree.token, "after the force-release")
