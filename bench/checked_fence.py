"""What a check of ``CheckedFence`` costs: answered from its cache, and asking tenure.

Starts a tenure server on 127.0.0.1 (a SQLite database in a scratch directory), takes a lease,
then times ``--rounds`` checks of its token with the default cache (at most one second: every
check but the first inside a second is a cache hit) and with ``cache=0`` (every check asks
tenure, what a check costs once a second per key and token). Prints the median and the 99th
percentile of each, in microseconds.

    bench/checked_fence.py --rounds 2000
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import uvicorn

import tenure
from tenure.compose import create_app
from tenure.fence import CheckedFence
from tenure.server.run import config as server_config
from tenure.service.principals import Principals
from tenure.settings import Settings


def serve(db: str) -> tuple[uvicorn.Server, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    app = create_app(Settings(db=db, port=port))
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.02)
    return server, f"http://127.0.0.1:{port}"


def timed(fence: CheckedFence, key: str, token: int, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fence.check(key, token)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def report(name: str, micros: list[float]) -> None:
    p99 = statistics.quantiles(micros, n=100)[98]
    print(f"{name:>22}: median {statistics.median(micros):8.1f} us   p99 {p99:8.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = f"sqlite:///{Path(scratch) / 'tenure.sqlite'}"
        store = tenure.open_store(db)
        try:
            token = Principals(store).bootstrap("bench", "agent", ()).token
        finally:
            store.close()
        server, url = serve(db)
        try:
            with tenure.Client(url, token=token) as client:
                lease = client.acquire("bench/checked", ttl_ms=600_000)
                cached = CheckedFence(client)
                report("cached (default)", timed(cached, lease.key, lease.token, args.rounds))
                asking = CheckedFence(client, cache=0)
                report(
                    "asking tenure (cache=0)", timed(asking, lease.key, lease.token, args.rounds)
                )
        finally:
            server.should_exit = True


if __name__ == "__main__":
    main()
