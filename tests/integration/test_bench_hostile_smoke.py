"""``bench/hostile.py`` still runs and reports every row (a smoke run of half a second a
phase, SQLite).

Nothing here asserts a speed: only that the holder and the flood ran against a real server
and the rows carry their figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # a minute on a busy machine: handed out first


def test_hostile_runs_and_prints_every_row() -> None:
    done = subprocess.run(
        [sys.executable, "bench/hostile.py", "--seconds", "0.5", "--backend", "sqlite",
         "--attackers", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("sqlite, ")]
    assert [row.split("  ")[0] for row in rows] == [
        "sqlite, bad tokens",
        "sqlite, bad tokens, no limit",
        "sqlite, deep JSON (600)",
        "sqlite, abandoned waits",
        "sqlite, subtree (2000 rows)",
    ]
    for row in rows:
        assert row.split()[-1], row  # the flood was answered (or abandoned)
    assert "401: " in rows[0] and "401: " in rows[1]
    assert "409: " in rows[4]  # the subtree is refused: someone holds keys under it
