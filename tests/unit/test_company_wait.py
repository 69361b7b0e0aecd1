"""How long a group on PostgreSQL waits for company: by the calls' measured arrival rate."""

from __future__ import annotations

import pytest

from tenure.server.runtime.pg_executor import GATHER_S, Arrivals, company_wait


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_wait_when_the_group_is_as_large_as_the_last() -> None:
    assert company_wait(8, 8, rate=10_000.0) == 0.0
    assert company_wait(9, 8, rate=10_000.0) == 0.0


def test_a_quiet_server_does_not_wait_for_calls_that_will_not_come() -> None:
    # 100 calls a second: not even one is expected within the longest wait (2 ms)
    assert company_wait(1, 4, rate=100.0, most=0.002) == 0.0
    assert company_wait(1, 4, rate=0.0) == 0.0


def test_the_wait_is_the_missing_calls_at_the_measured_rate_with_room_for_the_spread() -> None:
    # 10,000 calls a second, 3 missing: 0.3 ms at that rate, 0.45 ms with the spread
    assert company_wait(5, 8, rate=10_000.0, most=0.002) == pytest.approx(0.00045)


def test_a_slower_rate_waits_longer_up_to_the_bound() -> None:
    fast = company_wait(2, 6, rate=20_000.0, most=0.002)
    slow = company_wait(2, 6, rate=4_000.0, most=0.002)
    assert fast < slow == 0.0015
    assert company_wait(2, 6, rate=1_000.0, most=0.002) == 0.002
    assert company_wait(1, 64, rate=1e9) <= GATHER_S


def test_the_arrival_rate_is_the_calls_taken_over_the_time_since_the_last_group() -> None:
    clock = Clock()
    arrivals = Arrivals(clock)
    arrivals.took(1)  # the first group: no interval yet
    assert arrivals.rate == 0.0
    clock.now += 0.002
    arrivals.took(10)  # 10 calls in 2 ms
    assert arrivals.rate == pytest.approx(5_000.0)
    clock.now += 0.001
    arrivals.took(10)  # 10,000 a second now: the average moves a fifth of the way
    assert arrivals.rate == pytest.approx(6_000.0)


def test_a_clock_that_did_not_move_changes_nothing() -> None:
    clock = Clock()
    arrivals = Arrivals(clock)
    arrivals.took(1)
    clock.now += 0.001
    arrivals.took(4)
    arrivals.took(50)  # same instant: no reading
    assert arrivals.rate == pytest.approx(4_000.0)
