"""The fleet soak, short: 12 agent processes work 80 items under kills and pauses.

On SQLite and PostgreSQL, against a real ``tenure serve``. The full soak (50 agents, 500 items)
is ``.venv/bin/python -m tests.soak.run --agents 50 --items 500``; see docs/reliability.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .fleet import SoakConfig, report, run_soak

pytestmark = pytest.mark.slow


def test_fleet_soak(backend: str, store_url: str, tmp_path: Path) -> None:
    cfg = SoakConfig(agents=12, items=80, ttl=1.0, kills=6, pauses=6, time_limit=40)
    result = run_soak(store_url, tmp_path / "soak", cfg, echo=lambda _: None)
    text = report(result)
    print(f"\nfleet soak on {backend}:\n{text}")
    f = result.figures
    assert result.ok, text
    assert f["done"] == f["items"], text
    assert f["duplicates"] == f["stale_accepted"] == f["stranded"] == 0, text
    assert f["stale_progress_accepted"] == 0, text
    # The chaos did something: it killed and paused agents in the middle of claims ...
    assert f["kills"] >= 3 and f["pauses"] >= 3, text
    assert f["kills_holding"] >= 1 and f["pauses_holding"] >= 1, text
    # ... and a dead holder's item stays assigned to it: it got done only by a takeover.
    assert f["takeovers"] >= f["kills_holding"], text
