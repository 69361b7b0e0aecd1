"""How long a direct-mode acquire/release cycle takes, and opening the client.

    python scripts/direct_cycle.py [--cycles N] [--db URL]

Prints the median and 90th percentile of ``N`` cycles (ms) on a fresh SQLite file (or
``--db``), and the time ``tenure.Client(db, principal=...)`` took to open. Run it against
another checkout with ``PYTHONPATH=<its src>`` to compare.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import tenure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=500)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'tenure.db'}"
        started = time.perf_counter()
        with tenure.Client(db, principal="bench") as client:
            opened = time.perf_counter() - started
            took = []
            for i in range(args.cycles):
                begin = time.perf_counter()
                lease = client.acquire(f"bench/{i % 10}", ttl_ms=30_000)
                client.release(lease.key, lease.token)
                took.append(time.perf_counter() - begin)
    took.sort()
    p90 = took[int(len(took) * 0.9)]
    print(
        f"{tenure.__file__}: open {opened * 1000:.0f} ms; cycle median"
        f" {statistics.median(took) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms ({args.cycles} cycles)"
    )


if __name__ == "__main__":
    main()
