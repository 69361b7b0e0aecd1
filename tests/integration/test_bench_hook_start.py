"""``bench/hook_start.py`` still runs and reports (a smoke run of a few runs). Nothing here
asserts a speed: only that the command hook ran against a real server and the figures came out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_hook_start_bench_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "hook.jsonl"
    done = subprocess.run(
        [sys.executable, "bench/hook_start.py", "-n", "3", "--script", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "## tenure's command hook: wall time per run (ms)" in done.stdout
    assert "| hook: edit, held file | 3 |" in done.stdout
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    rows = ["true", "python -c pass", "python -S -c pass", "python -I -S -c pass"]
    rows += ["hook: edit, own file", "hook: edit, held file", "hook: heartbeat"]
    for row in [*rows, "script: edit, own file"]:
        assert 0 < line[row]["p50_ms"] <= line[row]["p90_ms"] <= line[row]["p99_ms"], (row, line)
