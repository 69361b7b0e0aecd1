"""A release that says why the claim ended (``reason: command_exited`` with the command's exit
status, as the supervisor of ``tenure dispatch`` sends): the fact is kept on the ``released``
transfer and on the release's events, on both backends; a bad cause changes nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure import InvalidRequest, Service
from tenure.core.items import Transfer

from ._items import ALICE, CAROL, org, snapshot


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    service = org(make_service)
    service.items.create(CAROL, "write the report", id="job")
    return service


def test_the_exit_status_is_kept_on_the_transfer_and_the_events(
    svc: Service, clock: tenure.FakeClock
) -> None:
    epoch = svc.items.claim(ALICE, "job", ttl_ms=60_000).lease.token
    out = svc.items.release(ALICE, "job", epoch, reason="command_exited", exit_status=3)
    assert out.released and out.item.status == "open" and out.item.assignee is None
    view = svc.items.get("job")
    assert view.transfers[-1] == Transfer(
        "job", "alice", None, epoch, "released", "alice", clock.now_ms(), "command_exited", 3
    )
    events = {e.type: e for e in svc.events(item="job")}
    assert events["released_item"].reason == "command_exited"
    assert events["released_item"].data["exit_status"] == 3
    assert events["released"].reason == "command_exited"  # the lease's ending says it too
    assert events["released"].data["exit_status"] == 3
    assert view.to_dict()["transfers"][-1]["exit_status"] == 3


def test_a_plain_release_records_no_cause(svc: Service) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    svc.items.release(ALICE, "job", epoch)
    last = svc.items.get("job").transfers[-1]
    assert (last.reason, last.note, last.exit_status) == ("released", None, None)
    events = {e.type: e for e in svc.events(item="job")}
    assert events["released_item"].reason is None
    assert "exit_status" not in events["released_item"].data


@pytest.mark.parametrize(
    ("reason", "exit_status", "field"),
    [
        ("command_exited", None, "exit_status"),
        (None, 3, "reason"),
        ("crashed", 3, "reason"),
        ("command_exited", 256, "exit_status"),
        ("command_exited", -1, "exit_status"),
        ("command_exited", True, "exit_status"),
    ],
)
def test_a_bad_cause_is_refused_and_changes_nothing(
    svc: Service, reason: str | None, exit_status: int | None, field: str
) -> None:
    epoch = svc.items.claim(ALICE, "job").lease.token
    before = snapshot(svc, "job")
    with pytest.raises(InvalidRequest) as refused:
        svc.items.release(ALICE, "job", epoch, reason=reason, exit_status=exit_status)
    assert refused.value.field == field
    assert snapshot(svc, "job") == before
