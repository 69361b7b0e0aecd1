"""The benchmark commands still run and report (a smoke run of a few seconds).

They measure; nothing here asserts a speed. What is checked is that each part runs against a
real server and store and writes the figures it exists to write, so that ``./dev bench`` and
``./dev bench peers`` do not rot between the runs that fill ``docs/performance.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_peers_runs_tenures_own_measurements(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    stdout = run(
        "bench/peers.py", "--quick", "--only", "hold,inproc,lag", "--no-phys", "--out", str(out)
    )
    assert "tenure vs targets (issue 9)" in stdout
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    (hold,) = line["hold"]
    assert (hold["status"], hold["renewed"], hold["lost"]) == (200, hold["n"], 0)
    assert hold["renew_all_s"] > 0 and hold["VmRSS"] > 0
    assert line["inproc"]["ops_per_s"] > 0
    lag = line["lag"]
    assert lag["trials"] > 0 and lag["errors"] == [] and lag["early"] == 0
    assert 0 < lag["p50"] <= lag["p99"]


def test_cycle_runs_on_sqlite_beside_its_peer() -> None:
    stdout = run("bench/cycle.py", "--seconds", "0.3", "--backend", "sqlite", "--workers", "1")
    rows = [r for r in stdout.splitlines() if r.startswith("| sqlite |")]
    assert [r.split("|")[2].strip() for r in rows] == ["tenure", "peer: raw SQL"], stdout
    for row in rows:
        assert int(row.split("|")[4].replace(",", "")) > 0, row
