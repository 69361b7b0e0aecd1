"""``GroupMemory``: what a PostgreSQL group thread remembers between groups, and the bound on
the database's clock that a fast group decides with (no I/O: a fake monotonic clock)."""

from __future__ import annotations

import pytest

from tenure.core.models import KeyRecord
from tenure.store import postgres_cache
from tenure.store.postgres_cache import GroupMemory


class Mono:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def rec(key: str, expires_at: int = 50_000) -> KeyRecord:
    return KeyRecord(key, 1, "alice", None, 10_000, 0, 0, expires_at)


@pytest.fixture
def mono() -> Mono:
    return Mono()


@pytest.fixture
def memory(mono: Mono) -> GroupMemory:
    m = GroupMemory(mono)
    m.committed([rec("a"), rec("b", 60_000)], "77", auth_version=3)
    m.clock(40_000, mono.t)
    return m


def test_the_clock_bound_is_the_read_plus_the_time_since_the_round_trip_was_sent(
    memory: GroupMemory, mono: Mono
) -> None:
    # +1: the database truncates to the ms; the time since the send, rounded up
    assert memory.upper_now() == 40_001
    mono.t += 0.0021
    assert memory.upper_now() == 40_001 + 3
    mono.t += postgres_cache.MAX_AGE_S  # too old a sample bounds nothing
    assert memory.upper_now() is None


def test_a_plan_needs_every_row_remembered(memory: GroupMemory) -> None:
    plan = memory.plan(["a", "b"])
    assert plan is not None
    assert plan.records == {"a": rec("a"), "b": rec("b", 60_000)}
    assert plan.now == 40_001 and plan.auth_version == 3
    params = plan.check_params()
    assert params["keys"] == ["a", "b"] and params["xmins"] == ["77", "77"]
    assert params["deadlines"] == [50_000, 60_000]
    assert params["slack"] == postgres_cache.SLACK_MS
    assert memory.plan(["a", "c"]) is None  # c is not remembered
    assert memory.plan([]) is None


def test_nothing_is_planned_before_an_auth_version_and_a_clock_are_known(mono: Mono) -> None:
    m = GroupMemory(mono)
    m.committed([rec("a")], "5", auth_version=None)
    m.clock(1_000, mono.t)
    assert m.plan(["a"]) is None
    m.committed([], "6", auth_version=1)
    assert m.plan(["a"]) is not None
    fresh = GroupMemory(mono)
    fresh.committed([rec("a")], "5", auth_version=1)
    assert fresh.plan(["a"]) is None  # no clock sample yet


def test_a_later_commit_replaces_the_row_and_its_version(memory: GroupMemory) -> None:
    memory.committed([rec("a", 90_000)], "78", auth_version=None)
    plan = memory.plan(["a"])
    assert plan is not None and plan.records["a"].expires_at == 90_000
    assert plan.xmins == ["78"] and plan.auth_version == 3


def test_a_stale_group_forgets_its_keys_and_pauses_the_fast_way(memory: GroupMemory) -> None:
    memory.forget(["a"], stale=True)
    assert memory.stale == 1 and "a" not in memory.rows
    for _ in range(postgres_cache.PAUSE):
        assert memory.plan(["b"]) is None
    assert memory.plan(["b"]) is not None


def test_a_lost_group_forgets_its_keys_without_a_pause(memory: GroupMemory) -> None:
    memory.forget(["a", "zzz"])
    assert memory.plan(["a"]) is None and memory.plan(["b"]) is not None


def test_the_memory_is_bounded(memory: GroupMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_cache, "MAX_ROWS", 3)
    memory.committed([rec("c")], "80", auth_version=None)
    assert len(memory.rows) == 3
    memory.committed([rec("d")], "81", auth_version=None)  # over: start over
    assert set(memory.rows) == {"d"}


def test_the_tighter_of_two_clock_samples_is_kept_while_young(
    memory: GroupMemory, mono: Mono
) -> None:
    # 15.625 ms later a round trip read 40,030: it bounds the clock at 40,030 where the sample
    # kept bounds it at 40,015.625 (that round trip was slow on its way out)
    mono.t += 0.015625
    memory.clock(40_030, mono.t)
    assert memory.upper_now() == 40_001 + 16
    memory.clock(40_005, mono.t)  # tighter: kept
    assert memory.upper_now() == 40_006
    mono.t += postgres_cache.MAX_AGE_S / 2  # the sample kept is too old to keep over a new one
    memory.clock(40_600, mono.t)
    assert memory.upper_now() == 40_601
