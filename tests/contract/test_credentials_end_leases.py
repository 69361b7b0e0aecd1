"""Credentials and leases end together, on each backend.

Removing a principal force-releases its live leases (reason ``principal_removed``) in the
removal's transaction; revoking the last token of a principal that still authenticates does the
same (reason ``credentials_revoked``), item claims included: the claim's epoch is dead, so a
stale completion or fenced write is refused. A principal with another valid token keeps them.
"""

from __future__ import annotations

import pytest

import tenure
from tenure import Service
from tenure.errors import StaleToken, TenureError
from tenure.service.principals import Principals

from ._items import ADMIN, BOB


def ended(svc: Service, after: int) -> list[tuple[str, str | None, str | None, str | None]]:
    return [
        (e.type, e.key, e.actor, e.reason)
        for e in svc.events(after=after, limit=1000)
        if e.type == "force_released"
    ]


def test_removing_a_principal_force_releases_its_leases(svc: Service) -> None:
    principals = Principals(svc.store)
    principals.bootstrap("bob")
    nightly = svc.acquire(BOB, "jobs/nightly", session="s1")
    svc.acquire(BOB, "src/", scope="subtree")
    start = svc.store.last_event_id()
    gone, removal = principals.remove(ADMIN, "bob")
    assert gone.name == "bob" and removal.removed
    assert set(removal.leases) == {"jobs/nightly", "src/"}
    reason = "principal_removed: its principal was removed"
    assert sorted(ended(svc, start)) == [
        ("force_released", "jobs/nightly", "root", reason),
        ("force_released", "src/", "root", reason),
    ]
    assert svc.list() == []
    assert svc.get("jobs/nightly").state == "force_released"
    with pytest.raises(StaleToken):
        svc.write(BOB, "jobs/nightly", nightly.token, "late")
    types = [e.type for e in svc.events(after=start, limit=1000)]
    assert types[-1] == "principal_removed" and "token_revoked" in types


def test_revoking_the_last_token_ends_leases_and_claims(svc: Service) -> None:
    principals = Principals(svc.store)
    first = principals.bootstrap("bob")
    lease = svc.acquire(BOB, "jobs/nightly")
    claim = svc.items.claim(BOB, "job")
    start = svc.store.last_event_id()
    principals.revoke(ADMIN, "bob", first.token_id)
    reason = "credentials_revoked: its principal's last valid token was revoked"
    assert sorted(ended(svc, start)) == [
        ("force_released", "items/job", "root", reason),
        ("force_released", "jobs/nightly", "root", reason),
    ]
    assert svc.list(holder="bob") == []
    with pytest.raises(StaleToken):
        svc.write(BOB, "jobs/nightly", lease.token, "late")
    with pytest.raises(TenureError):
        svc.items.complete(BOB, "job", claim.lease.token, "done")
    item = svc.items.get("job")
    assert item.item.status != "done"
    assert item.transfers[-1].reason == "force_released"
    assert item.transfers[-1].note == reason


def test_a_principal_with_another_valid_token_keeps_its_leases(svc: Service) -> None:
    principals = Principals(svc.store)
    first = principals.bootstrap("bob")
    principals.bootstrap("bob")  # a second token
    svc.acquire(BOB, "jobs/nightly")
    start = svc.store.last_event_id()
    principals.revoke(ADMIN, "bob", first.token_id)
    assert ended(svc, start) == []
    assert [lease.key for lease in svc.list(holder="bob")] == ["jobs/nightly"]


def test_an_expired_token_does_not_keep_them(svc: Service, clock: tenure.FakeClock) -> None:
    principals = Principals(svc.store)
    principals.bootstrap("bob", ttl_ms=1000)
    second = principals.bootstrap("bob")
    clock.advance(2000)
    svc.acquire(BOB, "jobs/nightly")
    start = svc.store.last_event_id()
    principals.revoke(ADMIN, "bob", second.token_id)
    assert [key for _, key, _, _ in ended(svc, start)] == ["jobs/nightly"]
