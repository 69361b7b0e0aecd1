"""A client process of the history chaos tests: ``python _history_worker.py VERB URL TOKEN NAME
LOG ...``. Every operation goes through :class:`checker.Recorder` into ``LOG`` (JSON lines, one
file per process), so a ``kill -9`` loses nothing that was acknowledged to this process.

- ``cycle --keys k1,k2 --ttl-ms --seconds --seed --hold-ms``: until ``--seconds`` pass (or it is
  killed): acquire a random key; on success write the fenced register (with an ``op_id``), hold
  it for up to ``--hold-ms`` (renewing once on the way), write again and release it. Transport
  errors and 503s (a server being killed and restarted) are recorded and the loop goes on.
  Prints ``ready`` once, then ``acquired KEY TOKEN`` for each acknowledged acquisition.
- ``pausable --keys KEY --ttl-ms --seconds``: acquire KEY, print ``held TOKEN``, then every
  50 ms write the register with that token and renew, until a write is refused (the test
  SIGSTOPs this process past its ttl and someone else acquires); then print the refusal as
  ``refused CODE`` and exit 0.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the checker

import tenure
from checker import Recorder
from tenure.client import RetryPolicy, TransportError

SAFETY_S = 60.0


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def cycle(rec: Recorder, args: argparse.Namespace) -> int:
    rnd = random.Random(args.seed)
    keys = args.keys.split(",")
    deadline = time.monotonic() + min(args.seconds, SAFETY_S)
    n = 0
    say("ready")
    while time.monotonic() < deadline:
        key = rnd.choice(keys)
        n += 1
        try:
            lease = rec.acquire(key, args.ttl_ms, task=f"{rec.principal}-{n}")
        except tenure.LeaseHeld:
            time.sleep(rnd.uniform(0.005, 0.03))
            continue
        except (TransportError, tenure.TenureError):
            time.sleep(0.05)
            continue
        say(f"acquired {key} {lease.token}")
        try:
            rec.write(key, lease.token, [rec.principal, lease.token, 1], f"{rec.name}-{n}-1")
            time.sleep(rnd.uniform(0, args.hold_ms / 2000))
            rec.renew(key, lease.token)
            time.sleep(rnd.uniform(0, args.hold_ms / 2000))
            rec.write(key, lease.token, [rec.principal, lease.token, 2], f"{rec.name}-{n}-2")
        except tenure.TenureError:
            pass  # lost or refused (recorded): release what may be left
        with contextlib.suppress(tenure.TenureError):
            rec.release(key, lease.token)
        time.sleep(rnd.uniform(0, 0.01))
    return 0


def pausable(rec: Recorder, args: argparse.Namespace) -> int:
    key = args.keys
    lease = rec.acquire(key, args.ttl_ms, task="pausable")
    say(f"held {lease.token}")
    deadline = time.monotonic() + min(args.seconds, SAFETY_S)
    n = 0
    while time.monotonic() < deadline:
        n += 1
        try:
            rec.write(key, lease.token, [rec.principal, n], f"{rec.name}-{n}")
        except tenure.StaleToken as exc:
            say(f"refused {exc.code}")
            try:
                rec.renew(key, lease.token)
            except tenure.LeaseLost as lost:
                say(f"renew {lost.code} {lost.reason}")
            return 0
        with contextlib.suppress(tenure.LeaseLost):  # the write tells: go on until refused
            rec.renew(key, lease.token)
        time.sleep(0.05)
    say("timeout")
    return 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("verb", choices=["cycle", "pausable"])
    parser.add_argument("url")
    parser.add_argument("token")
    parser.add_argument("name")
    parser.add_argument("log")
    parser.add_argument("--keys", required=True)
    parser.add_argument("--ttl-ms", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hold-ms", type=float, default=200)
    parser.add_argument("--budget", type=float, default=10)
    parser.add_argument("--session", default=None, help="the client's session (else a random one)")
    parser.add_argument("--principal", default=None, help="the token's principal (else NAME)")
    args = parser.parse_args()
    retry = RetryPolicy(attempts=100, budget=args.budget, backoff=0.05, max_backoff=0.5)
    client = tenure.Client(args.url, token=args.token, timeout=5, retry=retry, session=args.session)
    rec = Recorder(client, args.principal or args.name, args.log, name=args.name)
    try:
        return {"cycle": cycle, "pausable": pausable}[args.verb](rec, args)
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
