"""PostgreSQL failover as clients see it: seconds without service, and the calls across it.

    python bench/failover.py [--standby sync|async|all] [--clients 8] [--before 3] [--after 8]

For each row: a throw-away primary with a streaming standby (``scripts/pg_pair.py``, the
embedded binaries the tests use), two ``tenure serve`` on libpq's multi-host URL, and
``--clients`` threads (tenure's Python client, its default retry policy, each on its own key,
half on each server) cycling acquire → fenced write (with an ``op_id``) → release. After
``--before`` seconds the primary is killed with SIGKILL and the standby promoted (as a failover
manager would); the load runs ``--after`` seconds more.

Printed per row:

- ``no service``: the longest stretch, from half a second before the kill on, in which no
  call completed;
- ``promote``: what the kill and ``pg_ctl promote`` took;
- every call's p50 / p99 / max before the failover, and of the calls that were in flight at the
  kill or started in the stretch without service ("across");
- the calls that failed for good (after the client's own retries), by error code (an acquire
  whose commit was cut off is ``unavailable`` with ``outcome: unknown``: the client does not
  repeat it).

All on one machine (2 cores shared by PostgreSQL, the servers and the clients). Nothing here
asserts a speed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))
sys.path.insert(0, str(HERE.parent / "tests"))

from pg_pair import PgPair  # noqa: E402

import tenure  # noqa: E402
from procs import ServeAt  # noqa: E402
from tenure.errors import TenureError  # noqa: E402
from tenure.service.principals import Principals  # noqa: E402


@dataclass
class Calls:
    done: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of successes
    failed: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _client_loop(url: str, token: str, key: str, stop: threading.Event, calls: Calls) -> None:
    client = tenure.Client(url, token=token)
    try:
        while not stop.is_set():
            for step in ("acquire", "write", "release"):
                start = time.monotonic()
                try:
                    if step == "acquire":
                        lease = client.acquire(key, ttl_ms=10_000)
                    elif step == "write":
                        client.fenced_write(key, lease.token, {"at": start}, op_id=uuid.uuid4().hex)
                    else:
                        client.release(key, lease.token)
                except TenureError as err:
                    with calls.lock:
                        outcome = getattr(err, "outcome", None)
                        calls.failed[err.code + (f" ({outcome})" if outcome else "")] += 1
                    break
                with calls.lock:
                    calls.done.append((start, time.monotonic()))
    finally:
        client.close()


def _admin(url: str) -> str:
    store = tenure.open_store(url)
    try:
        return Principals(store).bootstrap("bench", "human", ("admin",), None).token
    finally:
        store.close()


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.0f}"


def run(sync: bool, clients: int, before: float, after: float) -> dict[str, str]:
    pair = PgPair.start(Path(tempfile.mkdtemp(prefix="tenure-bench-pair-")), sync=sync)
    servers: list[ServeAt] = []
    try:
        token = _admin(pair.url)
        servers = [ServeAt(pair.url), ServeAt(pair.url)]
        calls, stop = Calls(), threading.Event()
        threads = [
            threading.Thread(
                target=_client_loop,
                args=(servers[n % 2].url, token, f"bench/failover/{n}", stop, calls),
                daemon=True,
            )
            for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        time.sleep(before)
        killed = time.monotonic()
        promote = pair.failover()
        time.sleep(after)
        stop.set()
        for thread in threads:
            thread.join(60)
    finally:
        for server in servers:
            server.kill()
        pair.remove()
    # the longest stretch without a completed call, from half a second before the kill on
    ends = [e for e in sorted(end for _, end in calls.done) if e >= killed - 0.5]
    gaps = [(b - a, a, b) for a, b in pairwise(ends)] or [(0.0, killed, killed)]
    _, gap_from, gap_to = max(gaps)
    quiet = [end - start for start, end in calls.done if end < killed]
    across = [end - start for start, end in calls.done if start <= gap_to and end >= gap_from]
    return {
        "standby": "synchronous" if sync else "asynchronous",
        "no service s": f"{gap_to - gap_from:.2f}",
        "promote s": f"{promote:.2f}",
        "before p50/p99/max ms": f"{_ms(quiet, 0.5)} / {_ms(quiet, 0.99)} / {_ms(quiet, 1)}",
        "across p50/p99/max ms": f"{_ms(across, 0.5)} / {_ms(across, 0.99)} / {_ms(across, 1)}",
        "calls": str(len(calls.done)),
        "failed for good": ", ".join(f"{k}: {v}" for k, v in calls.failed.items()) or "0",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--standby", choices=["sync", "async", "all"], default="all")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--before", type=float, default=3.0)
    parser.add_argument("--after", type=float, default=8.0)
    args = parser.parse_args(argv)
    kinds = [True, False] if args.standby == "all" else [args.standby == "sync"]
    rows = [run(sync, args.clients, args.before, args.after) for sync in kinds]
    heads = list(rows[0])
    widths = [max(len(h), *(len(r[h]) for r in rows)) for h in heads]
    print(" | ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(row[h].ljust(w) for h, w in zip(heads, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
