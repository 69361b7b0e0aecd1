"""``bench/hostile.py`` still runs and reports (a smoke run of a second a phase, SQLite).

Nothing here asserts a speed: only that the holder and the flood ran against a real server
and the rows carry their figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_hostile_runs_and_prints_both_rows() -> None:
    done = subprocess.run(
        [sys.executable, "bench/hostile.py", "--seconds", "0.5", "--backend", "sqlite",
         "--attackers", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("sqlite, ")]
    assert [row.split("  ")[0] for row in rows] == ["sqlite, defaults", "sqlite, no rate limit"]
    for row in rows:
        assert "401: " in row and row.split()[-1], row  # the flood was answered
