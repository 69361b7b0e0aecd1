"""Hostile clients beside a holder, on each backend: floods the holder must not feel.

    python bench/hostile.py [--seconds 5] [--backend sqlite|postgres|all] [--attackers 16]
                            [--floods bad-tokens,no-limit,deep-json,abandoned-waits,subtree]

For each row ``tenure serve`` runs on a fresh database (a SQLite file; a fresh PostgreSQL
database of ``TENURE_BENCH_PG_URL``, else of a throw-away embedded server, as
``bench/cycle.py``). One holder (a thread, keep-alive HTTP) cycles acquire → release on its key
and times every acquire: first alone for ``--seconds`` (quiet), then for as long again while
another process floods the server over ``--attackers`` keep-alive connections, as fast as the
server answers. The floods (``--floods``, all by default):

- ``bad-tokens``: ``POST /v1/leases/acquire`` with a fresh random, well-formed ``tnr_…`` token
  each, at the server's defaults (all of the flood comes from 127.0.0.1, the holder's own
  address: past its first 50 failures the made-up tokens are refused as ``429`` from memory,
  each a second late, while the holder's valid token is still served);
- ``no-limit``: the same flood with ``TENURE_AUTH_FAILURES_BURST`` huge (every random token is
  looked up, outside any group, at most four at once, and answered ``401`` at once);
- ``deep-json``: acquires by a principal of its own with ``meta`` nested 600 levels deep;
- ``abandoned-waits``: acquires with ``wait_ms`` 10 s on a key another principal holds, each
  connection closed 50 ms after its request (and opened again);
- ``subtree``: subtree acquisitions of a prefix with ``TREE_ROWS`` live leases under it
  (refused ``409``: another principal holds them).

Printed per row: the holder's p50 and p99 acquire, quiet and under the flood, the p99 ratio
(the target: at most 2x), the flood's rate and the answers it got (``abandoned``: closed before
an answer; ``reset``: the server closed the connection). All of it on one machine: the flood's
own CPU competes with the server and the holder (on 2 cores, that is much of what the ratio
shows). Nothing here asserts a speed.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import tenure
from tenure.service.principals import Principals

HERE = Path(__file__).resolve().parent
KEY = "bench/holder"
BLOCKED = "bench/blocked"  # held by someone else: the abandoned waits wait on it
TREE = "tree/"  # TREE_ROWS live leases under it: the subtree flood asks for all of it
TREE_ROWS = 2000
DEPTH = 600  # levels of the deep-JSON flood's meta
NO_LIMIT = {"TENURE_AUTH_FAILURES_BURST": str(10**9), "TENURE_AUTH_FAILURES_PER_S": str(10**9)}
ABANDON_S = 0.05
FLOODS = ("bad-tokens", "no-limit", "deep-json", "abandoned-waits", "subtree")


@dataclass(frozen=True)
class Flood:
    """One row: what each request of the flood is, and the server's environment."""

    label: str
    body: bytes
    token: bool = False  # a valid token of its own (else a random one per request)
    abandon_s: float | None = None  # close the connection this long after each request
    env: dict[str, str] = field(default_factory=dict)
    tree: bool = False  # seed TREE_ROWS leases under TREE


def floods() -> dict[str, Flood]:
    deep = b'{"key":"bench/deep","meta":{"a":' + b"[" * DEPTH + b"]" * DEPTH + b"}}"
    waits = b'{"key":"%s","ttl_ms":30000,"wait_ms":10000}' % BLOCKED.encode()
    subtree = b'{"key":"%s","ttl_ms":30000,"scope":"subtree"}' % TREE.encode()
    flood = b'{"key":"bench/flood"}'
    return {
        "bad-tokens": Flood("bad tokens", flood),
        "no-limit": Flood("bad tokens, no limit", flood, env=NO_LIMIT),
        "deep-json": Flood(f"deep JSON ({DEPTH})", deep, token=True),
        "abandoned-waits": Flood("abandoned waits", waits, token=True, abandon_s=ABANDON_S),
        "subtree": Flood(f"subtree ({TREE_ROWS} rows)", subtree, token=True, tree=True),
    }


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
    """``tenure serve`` on ``db`` (a free port), its URL while it runs. Its stderr goes to a
    file (a flood of 500s writes a traceback each: a pipe nobody reads would stall it)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env.update(extra_env)
    cmd = [sys.executable, "-m", "tenure.cli", "serve", "--db", db, "--port", str(port)]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"tenure serve exited: {log.read()[-2000:]}")
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


def seed(db: str, tree: bool) -> tuple[str, str]:
    """The holder's token and the attacker's (a principal of its own); ``BLOCKED`` held by a
    third; with ``tree``, ``TREE_ROWS`` leases under ``TREE`` held by it too."""
    store = tenure.open_store(db)
    try:
        principals = Principals(store)
        tokens = [principals.bootstrap(name, "service").token for name in ("holder", "attacker")]
        service = tenure.Service(store)
        service.acquire("blocker", BLOCKED, ttl_ms=600_000)
        for i in range(TREE_ROWS if tree else 0):
            service.acquire("blocker", f"{TREE}{i // 100:03d}/{i:05d}", ttl_ms=600_000)
        return tokens[0], tokens[1]
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


def _request(flood: Flood, token: str | None) -> bytes:
    token = token or f"tnr_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
    head = (
        f"POST /v1/leases/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(flood.body)}\r\n\r\n"
    )
    return head.encode() + flood.body


async def _answer(reader: asyncio.StreamReader) -> str:
    """The status of the reply (its body read and dropped)."""
    reply = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in reply.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    await reader.readexactly(length)
    return reply[9:12].decode()


async def _flood_one(
    port: int, stop: float, counts: Counter[str], flood: Flood, token: str | None
) -> None:
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    while time.monotonic() < stop:
        if writer is None or reader is None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(_request(flood, token if flood.token else None))
            if flood.abandon_s is None:
                counts[await _answer(reader)] += 1
                continue
            try:
                counts[await asyncio.wait_for(_answer(reader), flood.abandon_s)] += 1
                continue
            except TimeoutError:
                counts["abandoned"] += 1
        except (ConnectionError, asyncio.IncompleteReadError):
            counts["reset"] += 1
        writer.close()
        reader = writer = None


def run_flood(
    port: int, seconds: float, attackers: int, flood: Flood, token: str, out: Any
) -> None:
    """In its own process: ``attackers`` connections sending ``flood`` for ``seconds``."""
    counts: Counter[str] = Counter()

    async def main() -> None:
        stop = time.monotonic() + seconds
        await asyncio.gather(
            *(_flood_one(port, stop, counts, flood, token) for _ in range(attackers))
        )

    asyncio.run(main())
    out.put(dict(counts))


def percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(db: str, backend: str, flood: Flood, args: argparse.Namespace) -> None:
    holder, attacker = seed(db, flood.tree)
    with serve(db, flood.env) as url:
        hold(url, holder, 0.5)  # warm up
        quiet = hold(url, holder, args.seconds)
        port = int(url.rsplit(":", 1)[1])
        ctx = multiprocessing.get_context("spawn")
        results = ctx.Queue()
        attack = (port, args.seconds + 1, args.attackers, flood, attacker, results)
        attacking = ctx.Process(target=run_flood, args=attack)
        attacking.start()
        time.sleep(0.5)  # the flood is on
        attacked = hold(url, holder, args.seconds)
        counts = results.get(timeout=60)
        attacking.join(30)
    total = sum(counts.values())
    q50, q99 = statistics.median(quiet), percentile(quiet, 0.99)
    a50, a99 = statistics.median(attacked), percentile(attacked, 0.99)
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    label = f"{backend}, {flood.label}"
    print(
        f"{label:<34} {q50:7.2f} {q99:7.2f} {a50:8.2f} {a99:8.2f} {a99 / q99:6.2f}x "
        f"{total / (args.seconds + 1):9.0f}/s  {answers}",
        flush=True,
    )


@contextlib.contextmanager
def databases(backend: str) -> Iterator[Callable[[], contextlib.AbstractContextManager[str]]]:
    """A maker of fresh databases of ``backend`` (one per row)."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            names = iter(range(1000))

            @contextlib.contextmanager
            def sqlite() -> Iterator[str]:
                yield f"sqlite:///{tmp}/{next(names)}.db"

            yield sqlite
        return
    cycle = _cycle_module()
    with cycle.postgres_server() as (server, _how):
        yield lambda: cycle.postgres_database(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="each phase (default 5)")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "all"], default="all")
    parser.add_argument("--attackers", type=int, default=16, help="flood connections (16)")
    parser.add_argument(
        "--floods", default=",".join(FLOODS), help=f"rows, comma-separated ({','.join(FLOODS)})"
    )
    args = parser.parse_args()
    chosen = [name.strip() for name in args.floods.split(",") if name.strip()]
    if not 0 < args.seconds <= 60 or not 0 < args.attackers <= 256:
        parser.error("--seconds: up to 60; --attackers: up to 256")
    if not chosen or set(chosen) - set(FLOODS):
        parser.error(f"--floods: some of {', '.join(FLOODS)}")
    backends = ["sqlite", "postgres"] if args.backend == "all" else [args.backend]
    print(f"holder's acquire (ms), quiet vs beside {args.attackers} flooding connections")
    print(
        f"{'run':<34} {'q p50':>7} {'q p99':>7} {'att p50':>8} {'att p99':>8} {'p99 x':>7} "
        f"{'flood':>11}  answers"
    )
    every = floods()
    for backend in backends:
        with databases(backend) as fresh:
            for name in chosen:
                with fresh() as db:
                    measure(db, backend, every[name], args)


if __name__ == "__main__":
    threading.current_thread().name = "holder"
    main()
