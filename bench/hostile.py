"""A hostile client beside a holder: random ``tnr_`` tokens at full speed, on each backend.

    python bench/hostile.py [--seconds 5] [--backend sqlite|postgres|all] [--attackers 16]

``tenure serve`` runs on a fresh database (a SQLite file; a fresh PostgreSQL database of
``TENURE_BENCH_PG_URL``, else of a throw-away embedded server, as ``bench/cycle.py``). One holder
(a thread, keep-alive HTTP) cycles acquire → release on its key and times every acquire: first
alone for ``--seconds`` (quiet), then for as long again while another process floods the server
with ``POST /v1/leases/acquire`` carrying a fresh random, well-formed ``tnr_…`` token each, over
``--attackers`` keep-alive connections, as fast as the server answers (under attack). Printed:
the holder's p50 and p99 acquire, quiet and under attack, their ratio (the target: p99 under
attack within 3x of quiet), the flood's rate and the answers it got (``401`` while an address
has failures left, ``429`` past them).

Two rows per backend: the server's defaults (all of the flood comes from 127.0.0.1, so after its
first 50 failures it is refused as ``429`` from memory, each a second late: one answer a second
per connection), and ``no rate limit`` (``TENURE_AUTH_FAILURES_BURST`` huge: every random token
is looked up, outside any group, at most four at once, and answered ``401`` at once). All of
it on one machine: the flood's own CPU competes with the server and the holder (on 2 cores,
that is most of what the ratio shows). Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import multiprocessing
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

import tenure
from tenure.service.principals import Principals

HERE = Path(__file__).resolve().parent
KEY = "bench/holder"
BODY = b'{"key":"bench/flood"}'
NO_LIMIT = {"TENURE_AUTH_FAILURES_BURST": str(10**9), "TENURE_AUTH_FAILURES_PER_S": str(10**9)}


def _cycle_module() -> Any:
    """bench/cycle.py (its PostgreSQL helpers), loaded by path: bench is not a package."""
    spec = importlib.util.spec_from_file_location("tenure_bench_cycle", HERE / "cycle.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look themselves up there)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve(db: str, extra_env: dict[str, str]) -> Iterator[str]:
    """``tenure serve`` on ``db`` (a free port), its URL while it runs."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env.update(extra_env)
    cmd = [sys.executable, "-m", "tenure.cli", "serve", "--db", db, "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tenure serve exited: {proc.stderr and proc.stderr.read()!r}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("tenure serve did not start")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def holder_token(db: str) -> str:
    store = tenure.open_store(db)
    try:
        return Principals(store).bootstrap("holder", "service").token
    finally:
        store.close()


def hold(url: str, token: str, seconds: float) -> list[float]:
    """Acquire → release cycles for ``seconds``: each acquire's time (ms)."""
    times: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            started = time.perf_counter()
            got = http.post("/v1/leases/acquire", json={"key": KEY, "ttl_ms": 30_000})
            times.append((time.perf_counter() - started) * 1000)
            assert got.status_code == 200, got.text
            lease = got.json()["lease"]
            http.post("/v1/leases/release", json={"key": KEY, "token": lease["token"]})
    return times


async def _flood_one(port: int, stop: float, counts: Counter[int]) -> None:
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    while time.monotonic() < stop:
        if writer is None or reader is None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        token = f"tnr_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
        head = (
            f"POST /v1/leases/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n"
        )
        try:
            writer.write(head.encode() + BODY)
            reply = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in reply.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            counts[int(reply[9:12])] += 1
        except (ConnectionError, asyncio.IncompleteReadError):
            writer.close()
            reader = writer = None
            counts[0] += 1


def flood(port: int, seconds: float, attackers: int, out: Any) -> None:
    """In its own process: ``attackers`` connections sending random tokens for ``seconds``."""
    counts: Counter[int] = Counter()

    async def main() -> None:
        stop = time.monotonic() + seconds
        await asyncio.gather(*(_flood_one(port, stop, counts) for _ in range(attackers)))

    asyncio.run(main())
    out.put(dict(counts))


def percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(db: str, label: str, env: dict[str, str], args: argparse.Namespace) -> None:
    token = holder_token(db)
    with serve(db, env) as url:
        hold(url, token, 0.5)  # warm up
        quiet = hold(url, token, args.seconds)
        port = int(url.rsplit(":", 1)[1])
        ctx = multiprocessing.get_context("spawn")
        results = ctx.Queue()
        attacker = ctx.Process(target=flood, args=(port, args.seconds + 1, args.attackers, results))
        attacker.start()
        time.sleep(0.5)  # the flood is on
        attacked = hold(url, token, args.seconds)
        counts = results.get(timeout=60)
        attacker.join(30)
    total = sum(counts.values())
    q50, q99 = statistics.median(quiet), percentile(quiet, 0.99)
    a50, a99 = statistics.median(attacked), percentile(attacked, 0.99)
    answers = ", ".join(f"{k or 'reset'}: {v}" for k, v in sorted(counts.items()))
    print(
        f"{label:<28} {q50:7.2f} {q99:7.2f} {a50:8.2f} {a99:8.2f} {a99 / q99:6.2f}x "
        f"{total / (args.seconds + 1):9.0f}/s  {answers}",
        flush=True,
    )


@contextlib.contextmanager
def databases(backend: str) -> Iterator[tuple[str, str]]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/a.db", f"sqlite:///{tmp}/b.db"
        return
    cycle = _cycle_module()
    with (
        cycle.postgres_server() as (server, _how),
        cycle.postgres_database(server) as first,
        cycle.postgres_database(server) as second,
    ):
        yield first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="each phase (default 5)")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "all"], default="all")
    parser.add_argument("--attackers", type=int, default=16, help="flood connections (16)")
    args = parser.parse_args()
    if not 0 < args.seconds <= 60 or not 0 < args.attackers <= 256:
        parser.error("--seconds: up to 60; --attackers: up to 256")
    backends = ["sqlite", "postgres"] if args.backend == "all" else [args.backend]
    print(f"holder's acquire (ms), quiet vs beside {args.attackers} flooding connections")
    print(
        f"{'run':<28} {'q p50':>7} {'q p99':>7} {'att p50':>8} {'att p99':>8} {'p99 x':>7} "
        f"{'flood':>11}  answers"
    )
    for backend in backends:
        with databases(backend) as (first, second):
            measure(first, f"{backend}, defaults", {}, args)
            measure(second, f"{backend}, no rate limit", NO_LIMIT, args)


if __name__ == "__main__":
    threading.current_thread().name = "holder"
    main()
