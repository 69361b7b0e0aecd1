"""The fleet soak, short: 12 agent processes work 80 items under kills and pauses.

On SQLite and PostgreSQL, against a real ``tenure serve``. The full soak (50 agents, 500 items)
is ``.venv/bin/python -m tests.soak.run --agents 50 --items 500``; see docs/reliability.md.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tenure

from .fleet import Server, SoakConfig, bootstrap_admin, probe_stranded, report, run_soak

pytestmark = pytest.mark.slow


def test_fleet_soak(backend: str, store_url: str, tmp_path: Path) -> None:
    # Chaos every 0.25 s: on an idle machine the fleet is done in about 6 s.
    cfg = SoakConfig(
        agents=12,
        items=80,
        ttl=1.0,
        kills=6,
        pauses=6,
        chaos_every=0.25,
        work=(0.1, 0.6),
        time_limit=40,
    )
    result = run_soak(store_url, tmp_path / "soak", cfg)
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


def test_the_probe_counts_an_item_held_past_one_ttl_as_stranded(tmp_path: Path) -> None:
    """The stranded check can fail: a claim that outlives its holder by more than one TTL
    (here a 60 s claim, as a server that never let a dead holder's claim lapse would show)."""
    db = f"sqlite:///{tmp_path}/probe.sqlite"
    tenure.open_store(db).close()
    root = bootstrap_admin(db)
    server = Server(db, tmp_path / "server.log")
    try:
        admin = tenure.Client(server.url, token=root)
        for item in ("held", "lapsed", "open"):
            admin.items.create(item, id=item)
        gone = tenure.Client(server.url, token=admin.add_principal("gone").token)
        gone.items.claim("held", ttl_ms=60_000)
        gone.items.claim("lapsed", ttl_ms=1_000)
        prober = tenure.Client(server.url, token=admin.add_principal("prober").token)
        stopped_at = time.monotonic()
        assert probe_stranded(prober, ["held", "lapsed", "open"], 1.0, stopped_at) == ["held"]
        assert time.monotonic() - stopped_at < 10
    finally:
        server.kill()
