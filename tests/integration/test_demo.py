"""The README's first command runs this demo; it must work on a fresh database and on reruns."""

import re
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


def test_demo_prints_readable_times_and_every_event_of_its_run(tmp_path: Path) -> None:
    run_demo(tmp_path / "demo.db")
    second = run_demo(tmp_path / "demo.db")
    assert re.search(r"expires \d\d:\d\d:\d\d\.\d{3} UTC \(in 5s\)", second), second
    assert not re.search(r"\d{13}", second), "no raw epoch milliseconds"
    events = second.split("the events of this run:\n")[1].splitlines()
    types = [re.sub(r".*UTC: (\w+) .*", r"\1", line) for line in events]
    assert types[0] == "acquired" and "alice" in events[0] and "token=3" in events[0]
    assert types.count("acquired") == 2 and types.count("released") == 2
    assert "conflict" in types and "by bob" in events[types.index("conflict")]
