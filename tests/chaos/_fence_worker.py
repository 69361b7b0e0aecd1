"""A holder process of the fence chaos tests: ``python _fence_worker.py GUARD URL TOKEN KEY
TARGET --ttl-ms N``. It acquires KEY from the tenure at URL, prints ``held TOKEN``, then every
50 ms writes through the guard with its token (``wrote N`` for each acknowledged write),
renewing as it goes (a lost renewal is ignored: it writes on, as a paused process that never
looked would). On the first refusal it prints ``refused CODE`` and exits 0.

- GUARD ``http``: ``PUT TARGET/orders/{id}`` with the ``Tenure-Token`` header (KEY is
  ``orders/{id}``); a 409 is the refusal.
- GUARD ``redis``: ``RedisFence.set(KEY, token, "value:" + KEY, ...)`` on the Redis at TARGET.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

import httpx
import redis

import tenure
from tenure.fence import RedisFence

SAFETY_S = 60.0


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def http_writer(target: str, key: str, token: int) -> object:
    http = httpx.Client(base_url=target, timeout=30)

    def write(n: int) -> str | None:
        reply = http.put(
            f"/{key}", json={"n": n}, headers={"Tenure-Token": str(token), "Tenure-Key": key}
        )
        if reply.status_code == 409:
            return str(reply.json()["code"])
        reply.raise_for_status()
        return None

    return write


def redis_writer(target: str, key: str, token: int) -> object:
    fence = RedisFence(redis.Redis.from_url(target, socket_timeout=30))

    def write(n: int) -> str | None:
        try:
            fence.set(key, token, "value:" + key, f"A-{n}")
        except tenure.StaleToken as exc:
            return exc.code
        return None

    return write


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("guard", choices=["http", "redis"])
    parser.add_argument("url")
    parser.add_argument("token")
    parser.add_argument("key")
    parser.add_argument("target")
    parser.add_argument("--ttl-ms", type=int, default=1000)
    args = parser.parse_args()
    client = tenure.Client(args.url, token=args.token, timeout=10)
    lease = client.acquire(args.key, ttl_ms=args.ttl_ms, task="paused-holder")
    make = http_writer if args.guard == "http" else redis_writer
    write = make(args.target, args.key, lease.token)
    say(f"held {lease.token}")
    deadline = time.monotonic() + SAFETY_S
    n = 0
    while time.monotonic() < deadline:
        n += 1
        refused = write(n)  # type: ignore[operator]
        if refused is not None:
            say(f"refused {refused}")
            return 0
        say(f"wrote {n}")
        with contextlib.suppress(tenure.LeaseLost):
            client.renew(args.key, lease.token)
        time.sleep(0.05)
    say("timeout")
    return 1


if __name__ == "__main__":
    sys.exit(main())
