"""``bench/lapsed.py`` still runs on SQLite: it renews the session's leases, reports exactly
its lapsed ones and prints the look-up's plan along the index of lapsed leases (no speed is
asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_lapsed_runs_and_reads_the_lapsed_index(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'bench.sqlite'}"
    done = subprocess.run(
        [sys.executable, "lapsed.py", "--db", db, "--hold", "200", "--churn", "300",
         "--lapsed", "7", "--rounds", "1"],
        cwd=ROOT / "bench", capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    figures, plan = done.stdout.split("\n", 1)
    assert set(json.loads(figures)) == {"store", "service", "lookup"}
    assert "tenure_leases_lapsed" in plan and "tenure_leases_due" in plan
