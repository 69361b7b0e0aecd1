"""Clocks: the fake one moves only when told to; the system one follows the wall clock."""

from __future__ import annotations

import threading
import time

import pytest

import tenure
from tenure.core.clock import Clock, FakeClock, SystemClock


def test_fake_clock_starts_where_told_and_stands_still() -> None:
    clock = FakeClock(1_700_000_000_000)
    assert clock.now_ms() == 1_700_000_000_000
    time.sleep(0.002)
    assert clock.now_ms() == 1_700_000_000_000


def test_fake_clock_default_start() -> None:
    assert FakeClock().now_ms() == 1_800_000_000_000


def test_advance_moves_forward_and_returns_the_new_instant() -> None:
    clock = FakeClock(1_000)
    assert clock.advance(500) == 1_500
    assert clock.advance(0) == 1_500
    assert clock.now_ms() == 1_500


def test_advance_refuses_to_go_back() -> None:
    clock = FakeClock(1_000)
    with pytest.raises(ValueError):
        clock.advance(-1)
    assert clock.now_ms() == 1_000


def test_set_jumps_to_an_instant() -> None:
    clock = FakeClock(1_000)
    clock.set(5_000)
    assert clock.now_ms() == 5_000
    clock.set(2_000)  # set may go back: tests use it to model a clock step
    assert clock.now_ms() == 2_000


def test_advance_is_thread_safe() -> None:
    clock = FakeClock(0)
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        for _ in range(1_000):
            clock.advance(1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clock.now_ms() == 8_000


def test_system_clock_reads_epoch_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    now = SystemClock().now_ms()
    after = time.time_ns() // 1_000_000
    assert isinstance(now, int) and before <= now <= after


def test_both_clocks_satisfy_the_protocol_and_are_exported() -> None:
    clocks: list[Clock] = [FakeClock(), SystemClock()]
    assert all(isinstance(c.now_ms(), int) for c in clocks)
    assert tenure.FakeClock is FakeClock and tenure.SystemClock is SystemClock
