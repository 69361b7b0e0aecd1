"""The cycle of two source trees of tenure, alternated round after round, on both backends.

    python bench/before_after.py --base /path/to/other/checkout/src          # 5 rounds, 6 s runs
    python bench/before_after.py --base ../main/src --rounds 3 --dur 4 --pg postgresql://…

For a change that must not cost speed (a refactor): each round runs the runner's ``cycle``
workload (``loadgen.py`` of the shared peer runner, 16 clients, one shared token, a session
each: as ``bench/pairs.py``) against ``tenure serve`` of the other tree (``--base``) and of this
one, on SQLite (a fresh file each run) and on PostgreSQL (one database per tree, made fresh when
the script starts), in reverse order every other round so that a drift within a round weighs on
both sides alike. It prints each round's ops/s and, per backend, the median of the rounds'
ratios (this tree over the base). The trees share this Python (``PYTHONPATH`` picks the tree),
so their dependencies must agree. Every server binds 127.0.0.1 and is stopped by its PID. It
measures and prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import peers
import psycopg

ROOT = Path(__file__).resolve().parent.parent


def fresh_database(url: str, name: str) -> str:
    """A fresh database ``name`` on the server of ``url`` (whose database is an admin's one)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the other tree's src/ folder")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dur", type=float, default=6, help="seconds per cycle run (6)")
    ap.add_argument("--pg", default=os.environ.get("TENURE_TEST_PG_URL"), help="an admin URL")
    args = ap.parse_args(argv)
    args.hold_n, args.trials = 1000, 4  # (loadgen's options; the cycle does not use them)
    trees = {"base": str(Path(args.base).resolve()), "new": str(ROOT / "src")}
    with tempfile.TemporaryDirectory(prefix="tenure-before-after-") as tmp:
        work = Path(tmp)
        out = work / "runs.jsonl"
        dbs = {t: fresh_database(args.pg, f"tenure_bench_{t}") for t in trees} if args.pg else {}

        def run(tree: str, backend: str) -> Callable[[int], float | None]:
            def once(i: int) -> float | None:
                label = f"{tree}-{backend}-{i}"
                (work / label).mkdir()
                db = dbs[tree] if backend == "pg" else f"sqlite:///{work / label / 't.db'}"
                os.environ["PYTHONPATH"] = trees[tree]
                with peers.tenure_server(db, work / label, label) as server:
                    peers.loadgen(server, out, "cycle", label, args)
                got = [r for r in peers.records(out) if r.get("label") == label]
                return float(got[-1]["metrics"]["ops_per_s"]) if got else None

            return once

        systems = {
            f"{t}-{b}": run(t, b) for b in ("sqlite", "pg") if b != "pg" or dbs for t in trees
        }
        names = list(systems)
        rounds: list[dict[str, float | None]] = []
        for i in range(args.rounds):
            got = {n: systems[n](i) for n in (names if i % 2 == 0 else names[::-1])}
            rounds.append(got)
            peers.log(f"round {i + 1}/{args.rounds}: {got}")
    print(render(rounds, names))
    return 0


def render(rounds: list[dict[str, float | None]], names: list[str]) -> str:
    out = ["| round | " + " | ".join(names) + " | " + " | ".join(_ratio_names(names)) + " |"]
    out.append("|" + "---|" * (1 + len(names) + len(names) // 2))
    ratios: dict[str, list[float]] = {r: [] for r in _ratio_names(names)}
    for i, got in enumerate(rounds):
        cells = [str(i + 1)] + [f"{got[n]:,.0f}" if got[n] else "-" for n in names]
        for backend in _backends(names):
            base, new = got[f"base-{backend}"], got[f"new-{backend}"]
            ratio = new / base if base and new else None
            if ratio:
                ratios[f"new/base {backend}"].append(ratio)
            cells.append(f"{ratio:.2f}x" if ratio else "-")
        out.append("| " + " | ".join(cells) + " |")
    medians = []
    for n in names:
        values = [v for r in rounds if (v := r[n])]
        medians.append(f"{statistics.median(values):,.0f}" if values else "-")
    for got in ratios.values():
        medians.append(
            f"{statistics.median(got):.2f}x ({min(got):.2f}-{max(got):.2f})" if got else "-"
        )
    out.append("| median | " + " | ".join(medians) + " |")
    return "\n".join(out)


def _backends(names: list[str]) -> list[str]:
    return list(dict.fromkeys(n.split("-", 1)[1] for n in names))


def _ratio_names(names: list[str]) -> list[str]:
    return [f"new/base {b}" for b in _backends(names)]


if __name__ == "__main__":
    sys.exit(main())
