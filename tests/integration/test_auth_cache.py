"""The server's authentication (tenure.server.http.auth) over a real store, on each backend.

Known tokens are answered from memory while no principal or token changed (a change through
the same server is seen at once, one made elsewhere within ``cache_ms``); unknown tokens are
remembered for ``negative_ms`` (no second lookup); failures are counted per client address
and past the budget the address gets ``429`` without a lookup, while the tokens it already
used still work. The store's lookups are counted by wrapping the real method.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

import tenure
from tenure.core.models import Principal
from tenure.errors import RateLimited, Unauthenticated
from tenure.server.http import auth
from tenure.server.http.auth import Authenticator
from tenure.service.principals import Principals
from tenure.settings import AuthSettings

ROOT = Principal("root", "human", roles=("admin",))
UNKNOWN = "tnr_0123456789ab_" + "A" * 43
HERE, THERE = "10.0.0.1", "10.0.0.2"


class Ticks:
    """The authenticator's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Setup:
    def __init__(self, store: tenure.Store, clock: tenure.FakeClock, **settings: int) -> None:
        self.store, self.clock, self.ticks = store, clock, Ticks()
        self.principals = Principals(store)
        self.lookups: list[str] = []
        real = store.token_by_hash

        def counted(token_hash: str) -> Any:
            self.lookups.append(token_hash)
            return real(token_hash)

        store.token_by_hash = counted  # type: ignore[method-assign]
        self.auth = Authenticator(
            self.principals, AuthSettings(**settings), clock.now_ms, self.ticks
        )

    def who(self, token: str, client: str | None = HERE) -> str:
        return run(self.auth.authenticate(token, client)).name


def run(coro: Coroutine[Any, Any, Principal]) -> Principal:
    return asyncio.run(coro)


@pytest.fixture
def setup(make_store: Callable[..., tenure.Store], clock: tenure.FakeClock) -> Setup:
    return Setup(make_store(), clock)


def test_known_tokens_skip_the_lookup_until_a_principal_or_token_changes(setup: Setup) -> None:
    alice = setup.principals.bootstrap("alice", "service")
    assert [setup.who(alice.token) for _ in range(5)] == ["alice"] * 5
    assert len(setup.lookups) == 1
    setup.ticks.now += 5  # the auth version is read again: nothing changed
    assert setup.who(alice.token) == "alice" and len(setup.lookups) == 1
    elsewhere = Principals(setup.store)  # another server on the same database
    elsewhere.bootstrap("bob", "service")
    assert setup.who(alice.token) == "alice" and len(setup.lookups) == 1  # within cache_ms
    setup.ticks.now += 1
    assert setup.who(alice.token) == "alice" and len(setup.lookups) == 2  # checked again


def test_a_revocation_elsewhere_is_seen_within_cache_ms_and_here_at_once(setup: Setup) -> None:
    alice = setup.principals.bootstrap("alice", "service")
    other = setup.principals.bootstrap("alice", "service")
    assert setup.who(alice.token) == setup.who(other.token) == "alice"
    Principals(setup.store).revoke(ROOT, "alice", alice.token_id)  # another server
    setup.ticks.now += 0.5
    assert setup.who(alice.token) == "alice"  # not yet: at most cache_ms late
    setup.ticks.now += 0.5
    with pytest.raises(Unauthenticated):
        setup.who(alice.token)
    setup.principals.revoke(ROOT, "alice", other.token_id)  # through this server
    with pytest.raises(Unauthenticated):
        setup.who(other.token)


def test_a_known_token_that_expires_is_refused_from_memory(setup: Setup) -> None:
    ci = setup.principals.bootstrap("ci", "service", ttl_ms=60_000)
    assert setup.who(ci.token) == "ci"
    setup.clock.advance(60_000)
    with pytest.raises(Unauthenticated) as refused:
        setup.who(ci.token)
    assert refused.value.detail.startswith("token expired at ")
    assert len(setup.lookups) == 1


def test_an_expired_token_is_refused_with_its_moment(setup: Setup) -> None:
    ci = setup.principals.bootstrap("ci", "service", ttl_ms=60_000)
    setup.clock.advance(60_001)
    with pytest.raises(Unauthenticated) as refused:
        setup.who(ci.token)
    assert refused.value.detail.startswith("token expired at ")


def test_unknown_tokens_are_remembered_for_negative_ms(setup: Setup) -> None:
    for _ in range(5):
        with pytest.raises(Unauthenticated) as refused:
            setup.who(UNKNOWN)
        assert refused.value.detail == "unknown or revoked token"
    assert len(setup.lookups) == 1
    setup.ticks.now += 10  # negative_ms (10 s) passed: asked again
    with pytest.raises(Unauthenticated):
        setup.who(UNKNOWN)
    assert len(setup.lookups) == 2


def test_the_memory_of_unknown_tokens_is_bounded(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "MAX_UNKNOWN", 3)
    tokens = [f"tnr_0123456789a{i}_" + "B" * 43 for i in range(5)]
    for token in tokens:
        with pytest.raises(Unauthenticated):
            setup.who(token, None)
    assert len(setup.auth._unknown) == 3  # the oldest were forgotten
    assert list(setup.auth._unknown) == tokens[2:]


def test_failures_past_the_budget_are_429_for_that_address_only(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    setup = Setup(make_store(), clock, failures_per_s=2, failures_burst=3)
    alice = setup.principals.bootstrap("alice", "service")
    assert setup.who(alice.token) == "alice"
    for i in range(3):  # the burst: 401 each, a lookup each
        with pytest.raises(Unauthenticated):
            setup.who(f"tnr_0123456789a{i}_" + "C" * 43)
    assert len(setup.lookups) == 4
    with pytest.raises(RateLimited) as limited:
        setup.who(UNKNOWN)
    assert limited.value.status == 429 and limited.value.retry_after_s == 1
    assert len(setup.lookups) == 4  # refused without a lookup
    with pytest.raises(RateLimited):
        setup.who("not-a-token")
    assert setup.who(alice.token) == "alice"  # a token it used successfully still works
    with pytest.raises(Unauthenticated):  # another address has its own budget
        setup.who(UNKNOWN, THERE)
    setup.ticks.now += 0.5  # one failure earned back (2 per second)
    with pytest.raises(Unauthenticated):
        setup.who(UNKNOWN)
    with pytest.raises(RateLimited):
        setup.who(UNKNOWN)


def test_a_valid_token_is_never_refused_for_others_failures(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> None:
    """Past its budget, an address is refused from memory the tokens that cannot be valid;
    a valid one the server has not seen yet (after a restart) is looked up and served."""
    setup = Setup(make_store(), clock, failures_per_s=1, failures_burst=2)
    alice = setup.principals.bootstrap("alice", "service")
    for i in range(2):
        with pytest.raises(Unauthenticated):
            setup.who(f"tnr_0123456789a{i}_" + "C" * 43)
    assert len(setup.lookups) == 2
    for i in range(3):  # ids that name no token: refused without a lookup
        with pytest.raises(RateLimited):
            setup.who(f"tnr_0123456789b{i}_" + "C" * 43)
    assert len(setup.lookups) == 2
    assert setup.who(alice.token) == "alice"  # never seen before: looked up, served
    assert len(setup.lookups) == 3
    forged = f"tnr_{alice.token_id}_" + "D" * 43  # a real id, a made-up secret
    with pytest.raises(RateLimited):
        setup.who(forged)
    with pytest.raises(RateLimited):
        setup.who(forged)
    assert len(setup.lookups) == 4  # looked up once, then remembered as refused
    bob = Principals(setup.store).bootstrap("bob", "service")  # another server, meanwhile
    setup.ticks.now += 0.1  # within cache_ms the new id is not known yet
    with pytest.raises(RateLimited):
        setup.who(bob.token)
    setup.ticks.now += 1  # the ids are read again with the auth version
    assert setup.who(bob.token) == "bob"
