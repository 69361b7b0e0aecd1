"""Child processes for the chaos tests, run as ``python tests/chaos/_workers.py VERB ...``.

Each verb opens its own store on the URL it is given (a separate process, its own connections),
so the tests exercise what several servers or `kill -9`ed holders do to one database.

- ``race URL KEY NAME LOG --start-ns --target --seconds --hold-ms``: from ``--start-ns`` (a
  ``time.monotonic_ns()`` instant, shared by every process on Linux) try to acquire ``KEY`` until
  ``--target`` acquisitions or ``--seconds`` pass. While holding: append ``enter`` to the shared
  log ``LOG`` (under an exclusive ``flock``), write the fenced register with the token, sleep
  ``--hold-ms``, append ``exit``, release. Prints one JSON report on stdout at the end.
- ``loop URL KEY NAME --ttl-ms``: acquire and release in a loop, printing each acknowledged
  token on its own line (flushed) the moment ``acquire`` returns. Runs until killed (or a safety
  bound of 60 s).
- ``hold URL KEY NAME --ttl-ms``: acquire once, write the fenced register, print the lease as one
  JSON line and sleep until killed (or 60 s).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import sys
import time
from typing import Any

import tenure

SAFETY_S = 60.0  # no child outlives a forgotten parent by more than this


def _service(url: str) -> tenure.Service:
    return tenure.Service(tenure.open_store(url))


def _log(path: str, kind: str, name: str, token: int) -> int:
    """Append one line to the shared log under an exclusive lock; returns its instant."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        now = time.monotonic_ns()
        os.write(fd, f"{kind} {name} {token} {now}\n".encode())
        return now
    finally:
        os.close(fd)  # closing drops the flock


def race(args: argparse.Namespace) -> int:
    svc = _service(args.url)
    rnd = random.Random(f"{args.name}-{os.getpid()}")
    report: dict[str, Any] = {
        "name": args.name,
        "held": [],  # [token, entered_ns, left_ns, expires_at]
        "attempts": 0,
        "conflicts": 0,
        "errors": [],
    }
    pause = args.start_ns - time.monotonic_ns()
    if pause > 0:
        time.sleep(pause / 1e9)
    deadline = time.monotonic() + args.seconds
    while len(report["held"]) < args.target and time.monotonic() < deadline:
        report["attempts"] += 1
        try:
            lease = svc.acquire(args.name, args.key, ttl_ms=args.ttl_ms, task="race")
        except tenure.LeaseHeld:
            report["conflicts"] += 1
            time.sleep(rnd.uniform(0, 0.002))
            continue
        except Exception as exc:
            report["errors"].append(f"acquire: {exc!r}")
            continue
        entered = _log(args.log, "enter", args.name, lease.token)
        try:
            svc.write(args.name, args.key, lease.token, {"holder": args.name, "token": lease.token})
        except Exception as exc:  # a stale token here means someone else acquired meanwhile
            report["errors"].append(f"write {lease.token}: {exc!r}")
        time.sleep(args.hold_ms / 1000)
        left = _log(args.log, "exit", args.name, lease.token)
        try:
            released = svc.release(args.name, args.key, lease.token)
            if not released.released:
                report["errors"].append(f"release {lease.token}: released=False")
        except Exception as exc:
            report["errors"].append(f"release {lease.token}: {exc!r}")
        report["held"].append([lease.token, entered, left, lease.expires_at])
        time.sleep(rnd.uniform(0, 0.003))  # let the others in
    svc.store.close()
    print(json.dumps(report), flush=True)
    return 0


def loop(args: argparse.Namespace) -> int:
    svc = _service(args.url)
    deadline = time.monotonic() + SAFETY_S
    out = sys.stdout
    while time.monotonic() < deadline:
        lease = svc.acquire(args.name, args.key, ttl_ms=args.ttl_ms, task="crash-loop")
        out.write(f"{lease.token}\n")
        out.flush()
        svc.release(args.name, args.key, lease.token)
    return 0


def hold(args: argparse.Namespace) -> int:
    svc = _service(args.url)
    lease = svc.acquire(args.name, args.key, ttl_ms=args.ttl_ms, task="crash-hold")
    svc.write(args.name, args.key, lease.token, {"holder": args.name, "token": lease.token})
    print(json.dumps({"token": lease.token, "expires_at": lease.expires_at}), flush=True)
    time.sleep(SAFETY_S)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="_workers.py")
    verbs = parser.add_subparsers(dest="verb", required=True)
    for verb in ("race", "loop", "hold"):
        p = verbs.add_parser(verb)
        p.add_argument("url")
        p.add_argument("key")
        p.add_argument("name")
        p.add_argument("--ttl-ms", type=int, default=10_000)
        if verb == "race":
            p.add_argument("log")
            p.add_argument("--start-ns", type=int, default=0)
            p.add_argument("--target", type=int, default=25)
            p.add_argument("--seconds", type=float, default=8.0)
            p.add_argument("--hold-ms", type=float, default=2.0)
    args = parser.parse_args(argv)
    verb = {"race": race, "loop": loop, "hold": hold}[args.verb]
    return verb(args)


if __name__ == "__main__":
    sys.exit(main())
