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

from outside import peer_runner

ROOT = Path(__file__).resolve().parents[2]
#: the shared runner's venv (run_peers.sh creates it), which bench/peers.py runs loadgen.py with


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_peers_runs_tenures_own_measurements(tmp_path: Path) -> None:
    peer_runner()  # the lag row loads its loadgen.py
    out = tmp_path / "results.jsonl"
    stdout = run(
        "bench/peers.py", "--quick", "--only", "hold,inproc,lag", "--no-phys", "--out", str(out)
    )
    assert "tenure vs performance targets" in stdout
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    (hold,) = line["hold"]
    assert (hold["status"], hold["renewed"], hold["lost"]) == (200, hold["n"], 0)
    assert hold["renew_all_s"] > 0 and hold["VmRSS"] > 0
    assert line["inproc"]["ops_per_s"] > 0
    lag = line["lag"]
    assert lag["trials"] > 0 and lag["errors"] == [] and lag["early"] == 0
    assert 0 < lag["p50"] <= lag["p99"]


def test_peers_runs_tenures_rows_on_one_shared_token(tmp_path: Path) -> None:
    """The runner's own loadgen.py, all 16 clients on one token, each in its own session: they
    exclude each other (contended is safe) and a taker waits for the holder's lease to expire."""
    peer_runner()  # bench/peers.py runs its loadgen.py
    out = tmp_path / "results.jsonl"
    run("bench/peers.py", "--quick", "--only", "tenure", "--no-phys", "--out", str(out))
    recs = [json.loads(text) for text in out.read_text().splitlines()]
    rows = {r["workload"]: r for r in recs if r.get("kind") == "loadgen"}
    assert sorted(rows) == ["contended", "cycle", "expiry_lag", "hold"]
    assert {r["label"] for r in rows.values()} == {"tenure"}
    for row in rows.values():
        assert row["metrics"]["errors"] == {}, row
    safety = rows["contended"]["metrics"]["safety"]
    assert safety["ok"] and safety["max_holders_inproc"] == 1, safety
    assert safety["acquisitions_checked"] > 0
    lag = rows["expiry_lag"]["metrics"]
    assert lag["timeouts"] == 0 and lag["early_takeovers"] == 0 and lag["token_increase_ok"]
    assert 0 <= lag["lag_ms"]["min"] <= lag["lag_ms"]["p50"] <= lag["lag_ms"]["p99"]


def test_cycle_runs_on_sqlite_beside_its_peer() -> None:
    stdout = run("bench/cycle.py", "--seconds", "0.3", "--backend", "sqlite", "--workers", "1")
    rows = [r for r in stdout.splitlines() if r.startswith("| sqlite |")]
    assert [r.split("|")[2].strip() for r in rows] == ["tenure", "peer: raw SQL"], stdout
    for row in rows:
        assert int(row.split("|")[4].replace(",", "")) > 0, row
