"""The command hook's wall time, as Claude Code runs it before each file edit and after each
tool, beside the floor it stands on, in one run: alternated rounds of

- ``true`` (what starting any process costs here, through ``subprocess``);
- ``python -c pass``, ``python -S -c pass``, ``python -I -S -c pass`` (the same interpreter;
  the last with the hook's own flags);
- the hook exactly as ``tenure agent setup claude-code`` writes it (``sh -c`` of the guarded
  command: this interpreter with ``-I -S`` on the hook module) against a live server, for an
  edit of the session's own file (a renewal), an edit of a file another session holds
  (blocked, exit 2) and a heartbeat (``PostToolUse``);
- with ``--script``, also ``tenure hook claude-code`` through the console script (site, the
  ``.pth`` files), an edit of the session's own file.

    python bench/hook_start.py                 # 200 rounds against a server it starts
    python bench/hook_start.py -n 50 --json out.jsonl
    python bench/hook_start.py --url http://127.0.0.1:7676 --token tnr_…

Without ``--url`` it starts ``tenure serve`` on a fresh SQLite file with a principal of its own,
and stops it after. It prints p50/p90/p99 of each row's wall time, and the median CPU time of
its processes (user and system: what a busy machine inflates least); it asserts nothing about
speed (the target, on a quiet machine: the hook's p50 under 60 ms, p99 under 120 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tenure
from tenure.core.harness_settings import hook_command

PYTHON = os.path.abspath(sys.executable)
TENURE = str(Path(PYTHON).parent / "tenure")
SRC = str(Path(tenure.__file__).resolve().parent.parent)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    args = parse()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = scratch_repo(root / "repo")
        if args.url:
            figures = measure(args.url, args.token or "", repo, args.n, args.script)
        else:
            from procs import ServeAt  # the tests' helper: tenure serve on a free port

            db = f"sqlite:///{root / 'bench.db'}"
            token = principal(db)
            server = ServeAt(db)
            try:
                figures = measure(server.url, token, repo, args.n, args.script)
            finally:
                server.kill()
    report(figures, args.json)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=200, help="rounds (default 200)")
    p.add_argument("--url", help="a running server (default: start one)")
    p.add_argument("--token", help="its bearer token (with --url)")
    p.add_argument("--script", action="store_true", help="also the console script's run")
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


def events(repo: Path) -> dict[str, str]:
    def edit(session: str, name: str) -> dict[str, Any]:
        return {
            "session_id": session,
            "cwd": str(repo),
            "transcript_path": "/t.jsonl",
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / name), "old_string": "a", "new_string": "b"},
        }

    post = {**edit("bench-a", "src/app.py"), "hook_event_name": "PostToolUse"}
    return {
        "own": json.dumps(edit("bench-a", "src/app.py")),
        "held": json.dumps(edit("bench-b", "src/app.py")),
        "heartbeat": json.dumps(post),
    }


def measure(url: str, token: str, repo: Path, n: int, script: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env.update(TENURE_URL=url, TENURE_TOKEN=token, TENURE_CONFIG_DIR=str(repo / ".cfg"))
    hook = ["/bin/sh", "-c", hook_command("tenure", PYTHON, SRC)]
    said = events(repo)
    rows: dict[str, tuple[list[str], str, int]] = {
        "true": (["true"], "", 0),
        "python -c pass": ([PYTHON, "-c", "pass"], "", 0),
        "python -S -c pass": ([PYTHON, "-S", "-c", "pass"], "", 0),
        "python -I -S -c pass": ([PYTHON, "-I", "-S", "-c", "pass"], "", 0),
        "hook: edit, own file": (hook, said["own"], 0),
        "hook: edit, held file": (hook, said["held"], 2),
        "hook: heartbeat": (hook, said["heartbeat"], 0),
    }
    if script:
        rows["script: edit, own file"] = ([TENURE, "hook", "claude-code"], said["own"], 0)
    timed(hook, env, said["own"], 0)  # the session's lease on the file, before the rounds
    runs: dict[str, list[float]] = {name: [] for name in rows}
    cpu: dict[str, list[float]] = {name: [] for name in rows}
    for i in range(n):
        order = list(rows.items())
        for name, (argv, stdin, code) in order if i % 2 == 0 else reversed(order):
            wall, used = timed(argv, env, stdin, code)
            runs[name].append(wall)
            cpu[name].append(used)
    return {"runs": runs, "cpu": cpu, "n": n}


def timed(argv: list[str], env: dict[str, str], stdin: str, code: int) -> tuple[float, float]:
    """Wall milliseconds of one run (it must exit ``code``), and the CPU milliseconds (user and
    system) of its processes (``sh``, Python, git): what a busy machine inflates least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, check=False)
    took = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != code:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    used = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return took, used


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(figures: dict[str, Any], out: str | None) -> None:
    summary = {
        name: {
            "n": len(v),
            "p50_ms": round(statistics.median(v), 1),
            "p90_ms": round(pct(v, 0.90), 1),
            "p99_ms": round(pct(v, 0.99), 1),
            "cpu_p50_ms": round(statistics.median(figures["cpu"][name]), 1),
        }
        for name, v in figures["runs"].items()
    }
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print("## tenure's command hook: wall time per run (ms)\n")
    print(f"{figures['n']} alternated rounds; load average {load:.2f} at the end\n")
    print("| run | n | p50 | p90 | p99 | CPU p50 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, s in summary.items():
        cells = [s["n"], s["p50_ms"], s["p90_ms"], s["p99_ms"], s["cpu_p50_ms"]]
        print(f"| {name} | {' | '.join(str(c) for c in cells)} |")
    if out:
        with open(out, "a") as f:
            line = {"bench": "hook_start", "at": time.time(), "load": load, **summary}
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
