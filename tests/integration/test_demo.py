"""The README's first command runs this demo; it must work on a fresh database and on reruns."""

import subprocess
import sys
from pathlib import Path


def run_demo(db: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tenure.demo", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def test_demo_runs_twice_and_tokens_keep_growing(tmp_path: Path) -> None:
    first = run_demo(tmp_path / "demo.db")
    assert "bob is refused: lease_held holder=alice" in first
    assert "stale_token, current_token=2" in first
    second = run_demo(tmp_path / "demo.db")
    assert "alice acquired demo/nightly-report: token 3" in second
    assert "stale_token, current_token=4" in second
