"""release-all: a process's exit ends every lease of its session, and nothing of anyone else's."""

from __future__ import annotations

import pytest

import tenure
from tenure import InvalidRequest, Service

from ._items import ALICE, org


def test_it_ends_the_sessions_leases_and_nothing_else(
    service: Service, clock: tenure.FakeClock
) -> None:
    mine = [service.acquire("web", f"jobs/{k}", ttl_ms=60_000, session="r1") for k in "abc"]
    other_session = service.acquire("web", "jobs/d", ttl_ms=60_000, session="r2")
    someone_else = service.acquire("bob", "jobs/e", ttl_ms=60_000, session="r1")
    clock.advance(10)
    result = service.release_all("web", session="r1")
    assert [lease.key for lease in result.released] == ["jobs/a", "jobs/b", "jobs/c"]
    assert all(lease.state == "released" for lease in result.released)
    assert [lease.token for lease in result.released] == [lease.token for lease in mine]
    assert service.get("jobs/d").state == service.get("jobs/e").state == "live"
    assert (other_session.holder, someone_else.holder) == ("web", "bob")
    released = service.events(type="released")
    assert sorted(e.key for e in released) == ["jobs/a", "jobs/b", "jobs/c"]
    assert {e.actor for e in released} == {"web"}


def test_without_a_session_it_ends_every_session_and_a_repeat_ends_nothing(
    service: Service,
) -> None:
    service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    service.acquire("web", "jobs/b", ttl_ms=60_000, session="r2")
    assert len(service.release_all("web").released) == 2
    assert service.release_all("web").released == ()
    assert service.list(holder="web") == []


def test_expired_leases_and_item_claims_are_left_alone(
    make_service: object, clock: tenure.FakeClock
) -> None:
    svc = org(make_service)  # type: ignore[arg-type]
    svc.items.create(ALICE, "write the report", id="job")
    claim = svc.items.claim(ALICE, "job", ttl_ms=60_000, session="s")
    svc.acquire(ALICE, "jobs/short", ttl_ms=1_000, session="s")
    svc.acquire(ALICE, "jobs/long", ttl_ms=60_000, session="s")
    clock.advance(2_000)
    result = svc.release_all(ALICE, session="s")
    assert [lease.key for lease in result.released] == ["jobs/long"]
    assert svc.get("items/job").state == "live"  # the item's claim: its own verbs end it
    assert svc.items.get("job").item.epoch == claim.lease.token


def test_many_leases_are_read_page_by_page(service: Service) -> None:
    from tenure.service import leases

    count = leases.RELEASE_PAGE * 2 + 3
    with service.group():
        for i in range(count):
            service.acquire("web", f"jobs/{i:05}", ttl_ms=60_000)
    assert len(service.release_all("web").released) == count
    assert service.list(holder="web") == []


def test_a_bad_session_is_refused_and_changes_nothing(service: Service) -> None:
    service.acquire("web", "jobs/a", ttl_ms=60_000, session="r1")
    with pytest.raises(InvalidRequest):
        service.release_all("web", session="bad\x00session")
    assert service.get("jobs/a").state == "live"
