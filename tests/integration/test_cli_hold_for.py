"""``tenure lock acquire KEY --for 2h``: a term, said plainly. The lease is acquired, then its
deadline extended to now + the term in the same command (capped by the policy's ``max_lease``,
with a note on stderr saying until when it is held); a ``--ttl`` past ``max_ttl`` names
``--for`` among the ways to hold longer."""

from __future__ import annotations

import time
from collections.abc import Callable

from procs import Shell, doc, fails

HOUR = 3_600_000


def test_for_holds_the_lease_that_long(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    before = time.time() * 1000
    lease = doc(jo, "lock", "acquire", "reports/q3", "--for", "2h", "--task", "q3")["lease"]
    after = time.time() * 1000
    assert before + 2 * HOUR <= lease["expires_at"] <= after + 2 * HOUR
    assert (lease["state"], lease["task"], lease["ttl_ms"]) == ("live", "q3", 30_000)
    # held by jo's CLI session: the lease it remembers; nobody else gets it
    bob = shell("bob")
    assert "held by jo" in fails(bob, 3, "lock", "acquire", "reports/q3")
    shown = doc(jo, "lock", "show", "reports/q3")["lease"]
    assert shown["expires_at"] == lease["expires_at"]


def test_for_past_max_lease_is_capped_with_a_note(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    done = jo("lock", "acquire", "reports/year", "--for", "3d")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("--for 3d is more than the policy's max_lease allows: held until")
    assert "tenure lock extend reports/year" in done.stderr
    lease = doc(jo, "lock", "show", "reports/year")["lease"]
    assert abs(lease["expires_at"] - (time.time() * 1000 + 24 * HOUR)) < 60_000


def test_a_ttl_too_long_offers_for(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    said = fails(jo, 2, "lock", "acquire", "jobs/a", "--ttl", "2h")
    assert "`tenure lock acquire KEY --for 2h` (acquired, then extended)" in said
    assert doc(jo, "lock", "ls")["leases"] == []  # refused: nothing held
