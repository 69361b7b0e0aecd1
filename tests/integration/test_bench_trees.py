"""``bench/trees.py`` runs variants of source trees side by side, and stops at once, saying why,
when a tree cannot serve. A smoke run of seconds: nothing here asserts a speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def trees(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "bench/trees.py", "--rounds", "1", "--dur", "0.5", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)


def test_two_variants_of_one_tree_run_alternated_and_print_their_ratio(tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    done = trees(
        "--backend", "sqlite", "--out", str(out),
        "--variant", f"plain={ROOT}", "--variant", f"logged={ROOT} --access-log",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "## sqlite: cycle ops/s, 1 alternated rounds" in done.stdout
    assert "| round | plain ops/s | logged ops/s | ratio |" in done.stdout
    assert "| median |" in done.stdout and "server CPU µs per call" in done.stdout
    runs = {r["label"]: r["metrics"] for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(runs) == ["sqlite-logged-0", "sqlite-plain-0"]
    for metrics in runs.values():
        assert metrics["errors"] == {} and metrics["ops_per_s"] > 0, metrics


def test_a_tree_whose_server_does_not_start_stops_the_run_before_any_round(
    tmp_path: Path,
) -> None:
    out = tmp_path / "runs.jsonl"
    done = trees(
        "--out", str(out), "--variant", f"a={ROOT}", "--variant", f"b={ROOT} --no-such-option"
    )
    assert done.returncode == 1
    assert "trees.py: variant b: tenure serve did not start" in done.stderr
    assert "No such option '--no-such-option'" in done.stderr
    assert not out.exists()  # no round ran


def test_a_folder_that_is_not_a_tree_is_refused(tmp_path: Path) -> None:
    done = trees("--variant", f"a={ROOT}", "--variant", f"b={tmp_path}")
    assert done.returncode == 1
    assert f"trees.py: variant b: {tmp_path} has no src/tenure" in done.stderr
