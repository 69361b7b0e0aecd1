"""The command hook's wall time: ``tenure hook claude-code`` run N times, as Claude Code runs
it before each file edit and after each tool, against a live server.

    python bench/hook_start.py                 # 200 runs against a server it starts
    python bench/hook_start.py -n 50 --json out.jsonl
    python bench/hook_start.py --url http://127.0.0.1:7676 --token tnr_…

Without ``--url`` it starts ``tenure serve`` on a fresh SQLite file with a principal of its own,
and stops it after. The events are an edit (``PreToolUse`` Edit of a file of a scratch git
repository: takes, then renews, the file's lease) and a heartbeat (``PostToolUse``), in turn.
It prints p50/p99 wall time of each, and for scale the interpreter's bare start
(``python -c pass``) and ``tenure --version`` (the full CLI's imports). It measures and prints;
it asserts nothing about speed (the target is a p50 under 100 ms on the machine it runs on).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PYTHON = Path(sys.executable)
TENURE = str(PYTHON.parent / "tenure")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    args = parse()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = scratch_repo(root / "repo")
        if args.url:
            figures = measure(args.url, args.token or "", repo, args.n)
        else:
            from procs import ServeAt  # the tests' helper: tenure serve on a free port

            db = f"sqlite:///{root / 'bench.db'}"
            token = principal(db)
            server = ServeAt(db)
            try:
                figures = measure(server.url, token, repo, args.n)
            finally:
                server.kill()
    report(figures, args.json)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=200, help="runs of each event (default 200)")
    p.add_argument("--url", help="a running server (default: start one)")
    p.add_argument("--token", help="its bearer token (with --url)")
    p.add_argument("--json", help="append the figures as one JSON line to this file")
    return p.parse_args()


def principal(db: str) -> str:
    from tenure.service.principals import Principals
    from tenure.store import open_store

    store = open_store(db)
    try:
        return Principals(store).bootstrap("bench-agent", "agent", ()).token
    finally:
        store.close()


def scratch_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(
        ["git", "-C", str(path), "remote", "add", "origin", "git@example.com:bench/repo.git"],
        check=True,
    )
    return path


def measure(url: str, token: str, repo: Path, n: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env.update(TENURE_URL=url, TENURE_TOKEN=token, TENURE_CONFIG_DIR=str(repo / ".cfg"))
    common = {"session_id": "bench-session", "cwd": str(repo), "transcript_path": "/t.jsonl"}
    edit = {
        **common,
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / "src/app.py"), "old_string": "a", "new_string": "b"},
    }
    post = {**common, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {}}
    runs: dict[str, list[float]] = {"edit": [], "heartbeat": []}
    for _ in range(n):
        for name, event in (("edit", edit), ("heartbeat", post)):
            runs[name].append(timed([TENURE, "hook", "claude-code"], env, json.dumps(event)))
    scale = {
        "python -c pass": [timed([str(PYTHON), "-c", "pass"], env) for _ in range(min(n, 30))],
        "tenure --version": [timed([TENURE, "--version"], env) for _ in range(min(n, 10))],
    }
    return {"runs": runs, "scale": scale, "n": n}


def timed(argv: list[str], env: dict[str, str], stdin: str = "") -> float:
    """Wall milliseconds of one run (it must succeed: exit 0)."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    return took


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(figures: dict[str, Any], out: str | None) -> None:
    rows = {**figures["runs"], **figures["scale"]}
    summary = {
        name: {
            "n": len(v),
            "p50_ms": round(statistics.median(v), 1),
            "p99_ms": round(pct(v, 0.99), 1),
        }
        for name, v in rows.items()
    }
    print("## tenure hook claude-code: wall time per run (ms)\n")
    print("| run | n | p50 | p99 |")
    print("| --- | --- | --- | --- |")
    for name, s in summary.items():
        print(f"| {name} | {s['n']} | {s['p50_ms']} | {s['p99_ms']} |")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"bench": "hook_start", "at": time.time(), **summary}) + "\n")


if __name__ == "__main__":
    main()
