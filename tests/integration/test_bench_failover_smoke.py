"""``bench/failover.py`` still runs and reports its row (a short run: a synchronous standby, two
clients, a second before the failover and three after).

Nothing here asserts a speed: only that the clients ran through a real failover (calls before
and after it) and the row carries its figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_failover_bench_runs_and_prints_its_row() -> None:
    done = subprocess.run(
        [sys.executable, "bench/failover.py", "--standby", "sync", "--clients", "2",
         "--before", "1", "--after", "3"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    head, _, row = done.stdout.splitlines()[-3:]
    assert head.split(" | ")[0].strip() == "standby"
    cells = [c.strip() for c in row.split(" | ")]
    assert cells[0] == "synchronous"
    assert float(cells[1]) > 0  # a stretch without service was measured
    assert int(cells[5]) > 0  # calls completed
