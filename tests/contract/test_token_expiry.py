"""Credentials that end: tokens with an expiry, on each backend.

A token issued with a lifetime authenticates until ``expires_at`` and from then on reads as
unknown, with a detail naming the moment; a dispatched agent's token expires, at the latest,
when its claim could last no longer (the policy's ``max_lease``); an ancestor revokes the
tokens of the agents below it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import Service
from tenure.core.items import item_key
from tenure.core.policy import Policy, PolicySet
from tenure.errors import Forbidden, InvalidRequest, Unauthenticated
from tenure.service.principals import Principals, hash_token

from ._items import ALICE, BOB, org

DAY = 86_400_000


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    service = org(make_service)
    service.items.create(ALICE, "write the report", id="job")
    return service


def test_a_token_with_a_lifetime_expires(svc: Service, clock: tenure.FakeClock) -> None:
    principals = Principals(svc.store)
    issued = principals.bootstrap("ci", "service", ttl_ms=30 * DAY)
    assert issued.expires_at == clock.now_ms() + 30 * DAY
    found = svc.store.token_by_hash(hash_token(issued.token))
    assert found is not None
    assert (found.principal.name, found.token_id, found.expires_at) == (
        "ci",
        issued.token_id,
        issued.expires_at,
    )
    clock.advance(30 * DAY - 1)
    assert principals.authenticate(issued.token).name == "ci"
    assert svc.store.principal_by_token(hash_token(issued.token)) is not None
    clock.advance(1)
    with pytest.raises(Unauthenticated) as refused:
        principals.authenticate(issued.token)
    assert refused.value.detail.startswith("token expired at 2")
    assert svc.store.principal_by_token(hash_token(issued.token)) is None


def test_another_token_of_the_same_principal_has_its_own_lifetime(
    svc: Service, clock: tenure.FakeClock
) -> None:
    principals = Principals(svc.store)
    forever = principals.bootstrap("ci", "service")
    short = principals.bootstrap("ci", "service", ttl_ms=60_000)
    assert forever.expires_at is None and short.expires_at == clock.now_ms() + 60_000
    clock.advance(60_000)
    with pytest.raises(Unauthenticated):
        principals.authenticate(short.token)
    assert principals.authenticate(forever.token).name == "ci"


@pytest.mark.parametrize("ttl_ms", [0, 999, -5, 11 * 366 * DAY, 1.5, "30d", True])
def test_a_bad_lifetime_is_refused_and_creates_nothing(svc: Service, ttl_ms: object) -> None:
    with pytest.raises(InvalidRequest) as refused:
        Principals(svc.store).bootstrap("ci", "service", ttl_ms=ttl_ms)  # type: ignore[arg-type]
    assert refused.value.field == "ttl_ms"
    assert svc.store.get_principal("ci") is None


def test_a_dispatched_agents_token_expires_at_the_claims_max_lease(
    make_service: Callable[..., Service], clock: tenure.FakeClock
) -> None:
    policy = PolicySet(Policy()).with_prefix("items/", max_lease=2 * DAY)
    svc = org(make_service, policy=policy)
    svc.items.create(ALICE, "write the report", id="job")
    sent = svc.items.dispatch(ALICE, "job", agent="r1", ttl_ms=20_000)
    assert svc.policy.for_key(item_key("job")).max_lease == 2 * DAY
    found = svc.store.token_by_hash(hash_token(sent.token))
    assert found is not None and found.expires_at == clock.now_ms() + 2 * DAY
    principals = Principals(svc.store)
    assert principals.authenticate(sent.token) == sent.agent
    clock.advance(2 * DAY)
    with pytest.raises(Unauthenticated):
        principals.authenticate(sent.token)


def test_an_ancestor_revokes_its_agents_token_and_a_stranger_may_not(svc: Service) -> None:
    sent = svc.items.dispatch(ALICE, "job", agent="r1", ttl_ms=20_000)
    principals = Principals(svc.store)
    token_id = sent.token.split("_")[1]
    with pytest.raises(Forbidden):
        principals.revoke(BOB, sent.agent.name, token_id)
    assert principals.authenticate(sent.token) == sent.agent
    revoked: list[str] = []
    principals.on_revoke.append(lambda: revoked.append("yes"))
    principals.revoke(ALICE, sent.agent.name, token_id)
    assert revoked == ["yes"]  # a server forgets what it knew of the token
    with pytest.raises(Unauthenticated):
        principals.authenticate(sent.token)
    events = svc.events(type="token_revoked")
    assert [(e.holder, e.actor) for e in events] == [(sent.agent.name, "alice")]
