"""The cycle of ``tenure serve`` from several source trees, alternated round after round.

    python bench/trees.py --variant before=../wtbefore --variant after=.
    python bench/trees.py --rounds 5 --dur 5 --backend sqlite,postgres \\
        --variant before=/work/wtbefore --variant after=/work/main
    python bench/trees.py --variant a=. --variant 'b=. TENURE_SOME_SWITCH=1 --access-log'

A *variant* is ``NAME=TREE``, then optionally environment variables (``KEY=VALUE``) and
arguments of ``tenure serve``, separated by spaces (quote the whole ``--variant``), or the
variables by colons (``NAME=TREE:KEY=VALUE:KEY=VALUE``). Each variant's server runs the code of
``TREE/src`` (``PYTHONPATH``), with the interpreter ``--python`` names if given, else
``TREE/.venv/bin/python`` when the tree has a venv, else this one; the script checks before
anything runs that each tree's ``tenure`` is imported from that tree. No ``TENURE_*`` variable
of the calling shell reaches a server: only the variant's own.

Each round runs every variant once per backend (in reverse order every other round, as
``bench/pairs.py`` does), the runner's cycle workload exactly as ``bench/peers.py`` runs
tenure's (the shared runner's ``loadgen.py``, backend ``http`` with the raw client, 16 clients
sharing one service token, a session each), on a fresh server started for the run and stopped
after it: SQLite on a fresh file, PostgreSQL on a fresh database (created for the run and
dropped after it) of ``TENURE_BENCH_PG_URL``'s server, else of the runner's PostgreSQL on :5433
(started if nothing answers there, as ``bench/peers.py --only pg`` does). It prints, per
backend, the rounds and the median (and range) of each variant's ratio to the first, and the
server's CPU time per call. It measures and prints; it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pairs
import peers

BACKENDS = ("sqlite", "postgres")
ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
START_S = 30  # a server that does not answer /healthz by then has failed to start
STOP_S = 30  # SIGTERM, then SIGKILL after this long
log = peers.log
PYTHON = Path(sys.executable)


class Failed(SystemExit):
    """A variant's tree or server is not usable: the whole run stops, saying why."""

    def __init__(self, why: str) -> None:
        super().__init__(f"trees.py: {why}")


@dataclass(frozen=True)
class Variant:
    name: str
    tree: Path
    env: dict[str, str]
    args: tuple[str, ...]
    python: Path

    def environ(self, **extra: str) -> dict[str, str]:
        """The server's environment: the caller's without ``TENURE_*``, the tree's code, the
        variant's variables, ``extra``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        env["PYTHONPATH"] = str(self.tree / "src")
        return {**env, **self.env, **extra}

    def describe(self) -> str:
        head = subprocess.run(
            ["git", "-C", str(self.tree), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        extra = " ".join([env, *self.args]).strip()
        return f"{self.name}: {self.tree} ({head or 'no git'}), {self.python}" + (
            f", {extra}" if extra else ""
        )


def parse_variant(text: str, python: Path | None) -> Variant:
    """``NAME=TREE[:K=V...] [K=V ...] [serve args ...]``."""
    name, sep, rest = text.partition("=")
    words = shlex.split(rest)
    if not sep or not name or not words:
        raise Failed(f"--variant {text!r}: write NAME=TREE, e.g. before=../wtbefore")
    tree_text, *colon_env = words[0].split(":")
    env: dict[str, str] = {}
    args: list[str] = []
    for word in colon_env + words[1:]:
        if ENV_WORD.match(word) and not args:
            key, _, value = word.partition("=")
            env[key] = value
        elif word in colon_env:
            raise Failed(f"--variant {text!r}: {word!r} is not KEY=VALUE")
        else:
            args.append(word)
    tree = Path(tree_text).expanduser().resolve()
    if not (tree / "src" / "tenure").is_dir():
        raise Failed(f"variant {name}: {tree} has no src/tenure: name a tenure source tree")
    own = tree / ".venv" / "bin" / "python"
    return Variant(name, tree, env, tuple(args), python or (own if own.exists() else PYTHON))


def check(variant: Variant) -> None:
    """The variant's Python imports ``tenure`` from the variant's tree, or the run stops."""
    probe = "import tenure, uvicorn; print(tenure.__file__)"
    got = subprocess.run(
        [str(variant.python), "-c", probe],
        env=variant.environ(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    where = Path(got.stdout.strip() or "?").resolve()
    if got.returncode or not where.is_relative_to(variant.tree / "src"):
        why = got.stderr.strip().splitlines()[-1:] or [f"imports tenure from {where}"]
        raise Failed(f"variant {variant.name}: {variant.python} with {variant.tree}/src: {why[0]}")


def starts(variant: Variant, workdir: Path) -> None:
    """The variant's server starts (and stops), before any round: a tree that cannot start
    fails the run in seconds, not after minutes of rounds."""
    workdir.mkdir()
    with server(variant, f"sqlite:///{workdir / 'tenure.db'}", workdir):
        pass


def tail(path: Path, lines: int = 20) -> str:
    text = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join("    " + line for line in text[-lines:])


@contextlib.contextmanager
def server(variant: Variant, db: str, workdir: Path) -> Iterator[peers.Server]:
    """``tenure serve`` of ``variant`` on ``db`` (fresh), its token (one service principal that
    every client shares, as in ``bench/peers.py``); stopped, by its PID, when the block ends."""
    env = variant.environ(TENURE_DATA_DIR=str(workdir), TENURE_DB=db)
    cli = [str(variant.python), "-m", "tenure.cli"]
    made = subprocess.run(
        [*cli, "principal", "add", "bench", "--kind", "service"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if made.returncode:
        raise Failed(f"variant {variant.name}: `tenure principal add` failed: {made.stderr}")
    port = peers.free_port()
    logf = workdir / "serve.log"
    with logf.open("wb") as out:
        proc = subprocess.Popen(
            [*cli, "serve", "--port", str(port), *variant.args], env=env, stdout=out, stderr=out
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, url, variant, logf)
        yield peers.Server(url, proc.pid, made.stdout.strip(), proc, db)
    finally:
        stop(proc)


def wait_healthy(proc: subprocess.Popen[bytes], url: str, variant: Variant, logf: Path) -> None:
    deadline = time.monotonic() + START_S
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise Failed(
                    f"variant {variant.name}: tenure serve did not start "
                    f"(exit {proc.poll()}); its output ended with:\n{tail(logf)}"
                ) from None
            time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


# PostgreSQL --------------------------------------------------------------------------------------
@contextlib.contextmanager
def pg_server(work: Path) -> Iterator[str]:
    """The URL of a PostgreSQL server whose role may create databases."""
    url = os.environ.get("TENURE_BENCH_PG_URL")
    if url:
        log(f"PostgreSQL: TENURE_BENCH_PG_URL ({urllib.parse.urlsplit(url).hostname})")
        yield url
        return
    with peers.postgres(work) as url:  # the runner's, on :5433 (started if needed)
        yield url


@contextlib.contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """A database created for one run and dropped after it."""
    import psycopg

    name = f"tenure_trees_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"'.encode())
    except psycopg.Error as err:
        raise Failed(f"cannot create a database on the PostgreSQL server: {err}") from None
    try:
        yield urllib.parse.urlsplit(server_url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


# the rounds --------------------------------------------------------------------------------------
class Bench:
    def __init__(self, args: argparse.Namespace, work: Path, out: Path) -> None:
        self.args, self.work, self.out = args, work, out
        self.metrics: dict[str, dict[str, Any]] = {}  # run label -> loadgen's metrics

    def run(self, variant: Variant, backend: str, pg_url: str | None, i: int) -> float | None:
        """One cycle run of ``variant`` on a fresh server and database: its ops/s."""
        label = f"{backend}-{variant.name}-{i}"
        workdir = self.work / label
        workdir.mkdir()
        with contextlib.ExitStack() as stack:
            if pg_url is None:
                db = f"sqlite:///{workdir / 'tenure.db'}"
            else:
                db = stack.enter_context(fresh_database(pg_url))
            srv = stack.enter_context(server(variant, db, workdir))
            peers.loadgen(srv, self.out, "cycle", label, self.args)
        got = [r for r in peers.records(self.out) if r.get("label") == label]
        if not got:
            return None
        metrics: dict[str, Any] = got[-1]["metrics"]
        self.metrics[label] = metrics
        if metrics.get("errors"):
            log(f"{label}: errors {metrics['errors']}")
        return float(metrics["ops_per_s"])

    def backend(self, backend: str, variants: list[Variant], pg_url: str | None) -> dict[str, Any]:
        def one(v: Variant) -> pairs.Run:
            return lambda i: self.run(v, backend, pg_url, i)

        systems = {v.name: one(v) for v in variants}
        return pairs.alternate(self.args.rounds, systems, lambda m: log(f"{backend} {m}"))

    def cpu_table(self, backend: str, variants: list[Variant]) -> str:
        """The server's CPU time per call (loadgen's ``server_cpu_pct`` over ops/s), median of
        the rounds, and its ratio to the first variant's."""
        per: dict[str, float | None] = {}
        for v in variants:
            got = []
            for i in range(self.args.rounds):
                m = self.metrics.get(f"{backend}-{v.name}-{i}")
                if m and m.get("server_cpu_pct") and m.get("ops_per_s"):
                    got.append(m["server_cpu_pct"] / 100 / m["ops_per_s"] * 1e6)
            per[v.name] = statistics.median(got) if got else None
        base = per[variants[0].name]
        out = ["| variant | server CPU µs per call (median) | ratio |", "|---|---|---|"]
        for v in variants:
            x = per[v.name]
            ratio = f"{x / base:.2f}x" if x and base else "-"
            out.append(f"| {v.name} | {'-' if x is None else f'{x:.0f}'} | {ratio} |")
        return "\n".join(out)


def options(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", default=[], help="NAME=TREE[:K=V] [K=V] [args]")
    ap.add_argument("--rounds", type=int, default=5, help="alternated rounds (5)")
    ap.add_argument("--dur", type=float, default=5, help="seconds per cycle run (5)")
    ap.add_argument("--backend", default="sqlite,postgres", help="sqlite,postgres (both)")
    ap.add_argument("--python", type=Path, help="every server's interpreter (see above)")
    ap.add_argument("--out", help="loadgen's results, JSON lines (default under /tmp)")
    args = ap.parse_args(argv)
    args.backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if not args.backends or set(args.backends) - set(BACKENDS):
        ap.error("--backend takes sqlite, postgres or both (comma-separated)")
    if len(args.variant) < 2:
        ap.error("name at least two variants: --variant before=TREE --variant after=TREE")
    if not 1 <= args.rounds <= 50 or not 0.5 <= args.dur <= 120:
        ap.error("--rounds between 1 and 50, --dur between 0.5 and 120 seconds")
    args.hold_n, args.trials = 10_000, 20  # as bench/peers.py passes them (unused by cycle)
    return args


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    variants = [parse_variant(v, args.python) for v in args.variant]
    if len({v.name for v in variants}) < len(variants):
        raise Failed("two variants have the same name")
    for v in variants:
        check(v)
        print(v.describe(), flush=True)
    runs = args.rounds * len(variants) * len(args.backends)
    log(f"{runs} runs of {args.dur:g} s (about {runs * (args.dur + 5) / 60:.0f} min)")
    out = Path(args.out or f"/tmp/tenure-trees-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    results: dict[str, tuple[dict[str, Any], str]] = {}
    with tempfile.TemporaryDirectory(prefix="tenure-trees-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # the runner's PostgreSQL, if started here, runs as postgres
        bench = Bench(args, work, out)
        for v in variants:
            starts(v, work / f"start-{v.name}")
        for backend in args.backends:
            on_pg = backend == "postgres"
            with pg_server(work / "pg") if on_pg else contextlib.nullcontext() as pg:
                result = bench.backend(backend, variants, pg)
            results[backend] = (result, bench.cpu_table(backend, variants))
    for backend, (result, cpu) in results.items():
        print(f"\n## {backend}: cycle ops/s, {args.rounds} alternated rounds of {args.dur:g} s\n")
        print(pairs.render(result))
        print()
        print(cpu)
    print(f"\nraw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
