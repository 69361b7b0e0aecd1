"""When the dispatch supervisor renews: a third of the TTL after the last grant, whatever its
start-up took, and never later than that interval."""

from __future__ import annotations

import time

from tenure.cli.agent import next_renewal


def test_a_supervisor_that_started_late_renews_sooner() -> None:
    now = time.time()
    granted = now - 0.5  # the claim was granted half a second ago, the TTL is 1 s
    wait = next_renewal(granted + 1.0, 1000, 1 / 3)
    assert wait == 0.0  # a third of the TTL has passed already: renew at once


def test_a_fresh_grant_waits_a_third_of_its_ttl() -> None:
    now = time.time()
    wait = next_renewal(now + 3.0, 3000, 1.0)
    assert 0.9 < wait <= 1.0


def test_a_deadline_from_a_clock_far_ahead_never_waits_longer_than_the_interval() -> None:
    wait = next_renewal(time.time() + 3600.0, 3000, 1.0)
    assert wait == 1.0
