"""SPEC invariant 12 for the work queue: bad input gets an error naming the field, and changes
nothing — on both backends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tenure
from tenure import Conflict, InvalidRequest, NotFound, Service, TooLarge

from ._items import ADMIN, ALICE, BOB, CAROL, org, snapshot

BIG_RESULT = "x" * (1024 * 1024)  # 2 bytes over the limit once quoted
BIG_DATA = {"x": "y" * 4096}
NOT_JSON = [float("nan"), float("inf"), object(), {1, 2}, "\udc80"]
Call = Callable[[Service, int], object]


@pytest.fixture
def seeded(make_service: Callable[..., Service], clock: tenure.FakeClock) -> tuple[Service, int]:
    """alice claimed ``job`` (with progress) and briefed; then bob was refused; ``free`` is open."""
    service = org(make_service)
    service.items.create(CAROL, "write the report", id="job", labels=["a"])
    service.items.create(CAROL, "free for all", id="free", priority=0)
    epoch = service.items.claim(ALICE, "job", ttl_ms=60_000, task="run-1").lease.token
    service.items.progress(ALICE, "job", epoch, "started", percent=10, data={"n": 1})
    service.items.briefing(ALICE)
    with pytest.raises(tenure.LeaseHeld):  # an event after alice's briefing cursor
        service.items.claim(BOB, "job")
    clock.advance(1_000)
    return service, epoch


def state(service: Service) -> tuple[Any, ...]:
    cursor = service.store.get_cursor("alice", "briefing")
    return (*snapshot(service, "job", "free"), cursor, service.items.ready())


def bad_texts(max_chars: int) -> list[object]:
    return ["", "   ", None, 5, ["x"], "a\x00b", "x" * (max_chars + 1)]


BAD_EPOCHS: list[object] = [0, -1, True, "1", 1.5, 2**63, None]
BAD_TTLS: list[object] = [10, 999, 600_001, 10**9, "1000", True, 1.5, -5]
BAD_IDS: list[object] = ["", "-bad", ".x", "a b", "a/b", "a\n", "x" * 129, 5, None]
BAD_LIMITS: list[object] = [0, -1, 1001, True, "5", 2.0]


def w(service: Service) -> Any:
    return service.items


CASES: list[tuple[str, Call, str]] = [
    *[
        ("create title", lambda s, e, x=x: w(s).create(ALICE, x, id="new"), "title")
        for x in bad_texts(512)
    ],
    ("create body type", lambda s, e: w(s).create(ALICE, "t", id="new", body=5), "body"),
    ("create body size", lambda s, e: w(s).create(ALICE, "t", body="x" * 65537), "body"),
    *[
        ("create priority", lambda s, e, x=x: w(s).create(ALICE, "t", priority=x), "priority")
        for x in (-1, 1001, True, "1", 1.5, None)
    ],
    *[
        ("create labels", lambda s, e, x=x: w(s).create(ALICE, "t", labels=x), "labels")
        for x in ("x", [1], ["x" * 65], [""], [f"l{i}" for i in range(33)], None, {"a": 1})
    ],
    *[("create id", lambda s, e, x=x: w(s).create(ALICE, "t", id=x), "id") for x in BAD_IDS[:-1]],
    ("create parent", lambda s, e: w(s).create(ALICE, "t", parent="-bad"), "parent"),
    # update: every field checked before anything changes (a claim included)
    ("update unknown", lambda s, e: w(s).update(BOB, "free", assignee="bob"), "assignee"),
    ("update epoch", lambda s, e: w(s).update(ALICE, "job", epoch=9), "epoch"),
    *[
        ("update status", lambda s, e, x=x: w(s).update(ALICE, "job", status=x), "status")
        for x in ("done", "cancelled", "weird", 5, "")
    ],
    *[
        (
            "update title, claiming",
            lambda s, e, x=x: w(s).update(BOB, "free", title=x, status="in_progress"),
            "title",
        )
        for x in bad_texts(512)
    ],
    (
        "update priority, claiming",
        lambda s, e: w(s).update(BOB, "free", priority=-1, status="in_progress"),
        "priority",
    ),
    ("update labels", lambda s, e: w(s).update(ALICE, "job", labels="a"), "labels"),
    ("update body", lambda s, e: w(s).update(ALICE, "job", body=None), "body"),
    *[("update id", lambda s, e, x=x: w(s).update(ALICE, x, title="t"), "id") for x in BAD_IDS],
    # claim
    *[
        ("claim ttl", lambda s, e, x=x: w(s).claim(BOB, "free", ttl_ms=x), "ttl_ms")
        for x in BAD_TTLS
    ],
    *[
        ("claim task", lambda s, e, x=x: w(s).claim(BOB, "free", task=x), "task")
        for x in bad_texts(1024)
        if x is not None
    ],
    *[
        ("claim takeover", lambda s, e, x=x: w(s).claim(BOB, "free", takeover=x), "takeover")
        for x in ("yes", 1, None)
    ],
    *[
        (
            "claim reason",
            lambda s, e, x=x: w(s).claim(BOB, "job", takeover=True, reason=x),
            "reason",
        )
        for x in bad_texts(1024)
        if x is not None
    ],
    *[("claim id", lambda s, e, x=x: w(s).claim(BOB, x), "id") for x in BAD_IDS],
    # renew and extend
    *[
        ("renew epoch", lambda s, e, x=x: w(s).renew(ALICE, "job", epoch=x), "epoch")
        for x in BAD_EPOCHS[:-1]
    ],
    ("renew ttl", lambda s, e: w(s).renew(ALICE, "job", ttl_ms=10), "ttl_ms"),
    ("extend both", lambda s, e: w(s).extend(ALICE, "job", until=1, by_ms=1), "until"),
    ("extend neither", lambda s, e: w(s).extend(ALICE, "job"), "until"),
    ("extend by_ms", lambda s, e: w(s).extend(ALICE, "job", by_ms=0), "by_ms"),
    ("extend until", lambda s, e: w(s).extend(ALICE, "job", until=-1), "until"),
    ("extend epoch", lambda s, e: w(s).extend(ALICE, "job", by_ms=1, epoch=0), "epoch"),
    # progress
    *[
        ("progress epoch", lambda s, e, x=x: w(s).progress(ALICE, "job", x, "m"), "epoch")
        for x in BAD_EPOCHS
    ],
    *[
        ("progress message", lambda s, e, x=x: w(s).progress(ALICE, "job", e, x), "message")
        for x in bad_texts(4096)
    ],
    *[
        (
            "progress percent",
            lambda s, e, x=x: w(s).progress(ALICE, "job", e, "m", percent=x),
            "percent",
        )
        for x in (101, -1, True, 1.5, "50")
    ],
    *[
        ("progress data", lambda s, e, x=x: w(s).progress(ALICE, "job", e, "m", data=x), "data")
        for x in ([1], "x", 5, {1: 2}, {"n": float("nan")}, {"s": "\udc80"})
    ],
    ("progress id", lambda s, e: w(s).progress(ALICE, "-bad", e, "m"), "id"),
    # complete
    *[
        ("complete epoch", lambda s, e, x=x: w(s).complete(ALICE, "job", x), "epoch")
        for x in BAD_EPOCHS
    ],
    *[
        ("complete result", lambda s, e, x=x: w(s).complete(ALICE, "job", e, result=x), "result")
        for x in NOT_JSON
    ],
    *[
        ("complete op_id", lambda s, e, x=x: w(s).complete(ALICE, "job", e, op_id=x), "op_id")
        for x in ("", 5, "x" * 257)
    ],
    # cancel, force-release, dispatch
    *[
        ("cancel reason", lambda s, e, x=x: w(s).cancel(ALICE, "job", reason=x), "reason")
        for x in bad_texts(1024)
    ],
    *[
        ("force reason", lambda s, e, x=x: w(s).force_release(ADMIN, "job", reason=x), "reason")
        for x in bad_texts(1024)
    ],
    ("force id", lambda s, e: w(s).force_release(ADMIN, "a b", reason="r"), "id"),
    *[
        ("dispatch agent", lambda s, e, x=x: w(s).dispatch(ALICE, "free", agent=x), "agent")
        for x in ("", "a b", "-x", 5, "x" * 200)
    ],
    ("dispatch ttl", lambda s, e: w(s).dispatch(ALICE, "free", ttl_ms=10), "ttl_ms"),
    ("dispatch task", lambda s, e: w(s).dispatch(ALICE, "free", task=""), "task"),
    # views
    ("list status", lambda s, e: w(s).list(status="weird"), "status"),
    *[("list limit", lambda s, e, x=x: w(s).list(limit=x), "limit") for x in BAD_LIMITS],
    ("list assignee", lambda s, e: w(s).list(assignee=5), "assignee"),
    ("list label", lambda s, e: w(s).list(label=""), "label"),
    *[("queue", lambda s, e, x=x: w(s).queue(x), "principal") for x in ("", " ", None, 5)],
    *[("ready limit", lambda s, e, x=x: w(s).ready(limit=x), "limit") for x in BAD_LIMITS],
    *[
        ("briefing ready", lambda s, e, x=x: w(s).briefing(ALICE, ready=x), "ready")
        for x in BAD_LIMITS
    ],
]


@pytest.mark.parametrize(("name", "call", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_naming_the_field_and_changes_nothing(
    seeded: tuple[Service, int], name: str, call: Call, field: str
) -> None:
    service, epoch = seeded
    before = state(service)
    with pytest.raises(InvalidRequest) as refused:
        call(service, epoch)
    assert refused.value.field == field, refused.value
    assert type(refused.value) is InvalidRequest  # 422, not a state conflict
    assert state(service) == before


@pytest.mark.parametrize(
    ("call", "field", "limit"),
    [
        (lambda s, e: w(s).progress(ALICE, "job", e, "m", data=BIG_DATA), "data", 4096),
        (lambda s, e: w(s).complete(ALICE, "job", e, result=BIG_RESULT), "result", 1024 * 1024),
        (lambda s, e: w(s).complete(ALICE, "job", e, result=[BIG_RESULT]), "result", 1024 * 1024),
    ],
    ids=["progress data", "complete result", "complete result list"],
)
def test_too_large_names_the_real_field_and_changes_nothing(
    seeded: tuple[Service, int], call: Call, field: str, limit: int
) -> None:
    service, epoch = seeded
    before = state(service)
    with pytest.raises(TooLarge) as refused:
        call(service, epoch)
    assert (refused.value.field, refused.value.limit) == (field, limit)
    assert refused.value.size is not None and refused.value.size > limit
    assert refused.value.detail.startswith(f"{field} is ")
    assert state(service) == before


def test_too_large_follows_the_policy_of_the_items_prefix(
    make_service: Callable[..., Service],
) -> None:
    policy = tenure.PolicySet().with_prefix("items/", max_meta_bytes=64, max_value_bytes=64)
    service = org(make_service, policy=policy)
    service.items.create(ALICE, "t", id="job")
    epoch = service.items.claim(ALICE, "job").lease.token
    with pytest.raises(TooLarge) as data:
        service.items.progress(ALICE, "job", epoch, "m", data={"x": "y" * 64})
    with pytest.raises(TooLarge) as result:
        service.items.complete(ALICE, "job", epoch, result="y" * 64)
    assert [(e.value.field, e.value.limit) for e in (data, result)] == [
        ("data", 64),
        ("result", 64),
    ]
    assert service.items.complete(ALICE, "job", epoch, result="y" * 62).item.result == "y" * 62


@pytest.mark.parametrize(
    "call",
    [
        lambda s, e: w(s).get("nope"),
        lambda s, e: w(s).update(ALICE, "nope", title="t"),
        lambda s, e: w(s).update(ALICE, "nope", status="in_progress"),
        lambda s, e: w(s).claim(ALICE, "nope"),
        lambda s, e: w(s).renew(ALICE, "nope"),
        lambda s, e: w(s).extend(ALICE, "nope", by_ms=1),
        lambda s, e: w(s).release(ALICE, "nope"),
        lambda s, e: w(s).force_release(ADMIN, "nope", reason="r"),
        lambda s, e: w(s).progress(ALICE, "nope", e, "m"),
        lambda s, e: w(s).complete(ALICE, "nope", e),
        lambda s, e: w(s).cancel(ADMIN, "nope", reason="r"),
        lambda s, e: w(s).dispatch(ALICE, "nope", agent="r1"),
        lambda s, e: w(s).create(ALICE, "t", id="new", parent="nope"),
    ],
)
def test_an_unknown_item_is_not_found_and_changes_nothing(
    seeded: tuple[Service, int], call: Call
) -> None:
    service, epoch = seeded
    before = state(service)
    with pytest.raises(NotFound) as missing:
        call(service, epoch)
    assert missing.value.what == "item"
    assert state(service) == before
    assert service.store.get("items/nope") is None
    assert service.store.get_principal("alice/r1") is None


def test_an_id_that_is_taken_is_a_conflict(seeded: tuple[Service, int]) -> None:
    service, _ = seeded
    before = state(service)
    with pytest.raises(Conflict) as taken:
        service.items.create(BOB, "another", id="job")
    assert taken.value.field == "id"
    assert state(service) == before
