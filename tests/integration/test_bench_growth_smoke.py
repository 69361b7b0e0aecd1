"""``bench/growth.py --quick`` still runs and reports, on each backend.

Nothing here asserts a speed: only that every part ran against real servers on a real
database, and that its figures are there and sane (positive, counted, a compaction that shrank
the history back toward an empty database).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from outside import peer_runner

ROOT = Path(__file__).resolve().parents[2]


def run_growth(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    peer_runner()  # growth's HTTP rows run the shared load generator
    out, svg = tmp_path / "growth.json", tmp_path / "growth.svg"
    done = subprocess.run(
        [sys.executable, "bench/growth.py", "--quick", "--seconds", "0.5",
         "--json", str(out), "--svg", str(svg), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert svg.read_text().startswith("<svg") and "</svg>" in svg.read_text()
    return done.stdout, json.loads(out.read_text())


def check_growth(backend: str, stdout: str, figures: dict[str, Any]) -> None:
    rows = [r for r in figures["rows"] if r["backend"] == backend]
    cycles = {(r["part"], r["size"]): r for r in rows if r["part"] in ("leases", "events")}
    assert set(cycles) == {
        ("leases", 1_000),
        ("leases", 10_000),
        ("events", 0),
        ("events", 100_000),
    }
    for row in cycles.values():
        assert row["ops_per_s"] > 0 and row["errors"] == 0, row
        assert 0 < row["acquire_p50_ms"] <= row["acquire_p99_ms"], row
        assert row["rss_mb"] > 10, row
    (hold,) = [r for r in rows if r["part"] == "renew-all"]
    assert hold["status"] == 200 and hold["renewed"] == 10_000 and hold["seconds"] > 0
    (compaction,) = [r for r in figures["compaction"] if r["backend"] == backend]
    assert compaction["ops"] >= 3_000 and compaction["passes"] >= 1
    assert compaction["first_pass"]["leases"] > 0 and compaction["first_pass"]["events"] > 0
    assert compaction["empty"]["bytes"] < compaction["before"]["bytes"]
    assert compaction["after_vacuum"]["bytes"] < compaction["before"]["bytes"]
    lines = [line for line in stdout.splitlines() if line.startswith(f"| {backend} |")]
    assert len(lines) == 8, stdout  # four cycle rows, two idle passes, renew-all, compaction


def test_growth_quick_on_sqlite(tmp_path: Path) -> None:
    stdout, figures = run_growth(tmp_path, "--backend", "sqlite")
    check_growth("sqlite", stdout, figures)
    assert figures["servers"] == {}  # (several servers need PostgreSQL)


@pytest.mark.slow
def test_growth_quick_on_postgres_with_servers(tmp_path: Path) -> None:
    stdout, figures = run_growth(tmp_path, "--backend", "postgres")
    check_growth("postgres", stdout, figures)
    servers = figures["servers"]["rows"]
    assert [r["servers"] for r in servers] == [1, 2, 3]
    for row in servers:
        assert row["ops_per_s"] > 0 and row["errors"] == 0 and not row["lag_errors"], row
        assert len(row["server_cpu_s_per_s"]) == row["servers"] and row["db_cpu_s_per_s"] > 0
        assert row["lag_p99_ms"] >= row["lag_p50_ms"], row
    assert "| 3 |" in stdout
