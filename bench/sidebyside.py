"""What the benchmarks that run several ways side by side on 2-3 ``tenure serve`` share: their
command line and their alternated rounds (bench/principal_bound.py, bench/event_order.py)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: one run of a way: (database, token, way, servers, clients, seconds, raw file) -> its row
OneRun = Callable[[str, str, str, int, int, float, Path], dict[str, Any]]


def main(
    doc: str,
    ways: Sequence[str],
    argv: list[str] | None,
    serve_as: Callable[[str, list[str]], None],
    tag: str,
    one_run: OneRun,
    prepare: Callable[[str], None] = lambda db: None,
    after: Callable[[str], Any] = lambda db: None,
) -> tuple[argparse.Namespace, list[dict[str, Any]], Any] | None:
    """A whole run: ``serve-as WAY ARGS...`` launches a server for ``serve_as`` (then
    ``None``); else a throw-away PostgreSQL database (``prepare`` it after tenure's schema),
    the alternated rounds, then ``after(db)``: the options, the rows and what ``after`` gave."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve-as"]:
        serve_as(argv[1], argv[2:])
        return None
    import growth
    from growth_http import bench_token

    import tenure

    args = options(doc, ways, argv)
    with (
        tempfile.TemporaryDirectory(prefix=f"tenure-{tag}-") as tmp,
        growth.databases("postgres", Path(tmp)) as fresh,
    ):
        db = fresh(tag)
        tenure.open_store(db).close()
        prepare(db)
        token = bench_token(db)
        raw = Path(tmp) / "raw.jsonl"
        a = args
        rows = rounds(a, tag, lambda w: one_run(db, token, w, a.servers, a.clients, a.seconds, raw))
        return args, rows, after(db)


def options(doc: str, ways: Sequence[str], argv: list[str]) -> argparse.Namespace:
    """The command line: servers, clients, seconds a run, rounds, the ways (a list)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=5.0, help="per run (default 5)")
    ap.add_argument("--rounds", type=int, default=2, help="alternated rounds (default 2)")
    ap.add_argument("--ways", default=",".join(ways), help=f"default {','.join(ways)}")
    args = ap.parse_args(argv)
    args.ways = args.ways.split(",")
    return args


def rounds(
    args: argparse.Namespace, tag: str, run: Callable[[str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each way run once a round, in reverse order every other round; each row says its
    round, and its ops/s (or its error) is printed as it ends."""
    rows = []
    for n in range(args.rounds):
        for way in args.ways if n % 2 == 0 else reversed(args.ways):
            r = run(way)
            rows.append({**r, "round": n + 1})
            said = r.get("ops_per_s", r.get("error"))
            print(f"[{tag}] {way} round {n + 1}: {said}", file=sys.stderr, flush=True)
    return rows


def loaded(
    script: str,
    db: str,
    token: str,
    way: str,
    servers: int,
    clients: int,
    seconds: float,
    raw: Path,
    waits: Any,
) -> dict[str, Any]:
    """The cycle on ``servers`` servers launched as ``script serve-as WAY``, with ``waits`` (a
    thread sampling the database: ``start``, ``stop``, ``join``, ``figures``) running over the
    load: the way, the load's figures and the waits'."""
    import contextlib
    import time

    from growth_http import cycle_load, serve

    launcher = [sys.executable, script, "serve-as", way]
    with contextlib.ExitStack() as stack:
        started = [stack.enter_context(serve(db, launcher=launcher)) for _ in range(servers)]
        waits.start()
        label = f"{Path(script).stem}-{way}-{time.time_ns()}"
        m = cycle_load(started, token, clients, seconds, raw, label)
        waits.stop.set()
        waits.join()
    return {"way": way, **m, **waits.figures()}
