"""The detached supervisor of a dispatched item: ``python -m tenure.cli.agent`` (started by
``tenure dispatch``, never by hand).

It reads its orders as one JSON document on stdin (so the agent's token is in neither argv
nor a file), starts CMD as the agent, renews the claim every ttl/3 while CMD lives, and when
CMD exits releases the claim unless CMD completed the item. If the claim is lost, CMD gets
SIGTERM, then SIGKILL after the grace period. If this supervisor is killed, CMD dies with it
(see :func:`tenure.cli.supervise.spawn_guarded`) and the claim lapses on its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

from tenure.cli.supervise import exit_status, spawn_guarded, stop
from tenure.client import Client
from tenure.client._shared import TransportError
from tenure.errors import TenureError

FINISHED = ("done", "cancelled")


@dataclass(frozen=True)
class Orders:
    url: str
    token: str  # the agent's bearer token
    agent: str
    item: str
    epoch: int
    ttl_ms: int
    expires_at: int
    grace_s: float
    cmd: list[str]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        env.update(
            TENURE_URL=self.url,
            TENURE_TOKEN=self.token,
            TENURE_AGENT=self.agent,
            TENURE_ITEM=self.item,
            TENURE_EPOCH=str(self.epoch),
        )
        return env


def log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"[tenure dispatch {stamp}] {message}", file=sys.stderr, flush=True)


def finished(client: Client, orders: Orders) -> str | None:
    """After a refused renewal: ``done``/``cancelled`` if CMD finished the item itself."""
    try:
        status = client.items.get(orders.item).item.status
    except TenureError:
        return None
    return status if status in FINISHED else None


def next_renewal(deadline: float, ttl_ms: int, interval: float) -> float:
    """Seconds until the next renewal: a third of the TTL after the last grant, which ended
    at ``deadline - ttl``. The first renewal thus makes up for the time this supervisor took to
    start (a loaded machine can take a good part of a short TTL), and never waits longer than
    ``interval`` even if the clocks disagree."""
    due = deadline - ttl_ms / 1000 + interval
    return min(max(due - time.time(), 0.0), interval)


def heartbeat(client: Client, orders: Orders, proc: subprocess.Popen[bytes]) -> str:
    """Renew until CMD exits (``exited``), the item is finished by CMD (``done``/``cancelled``)
    or the claim is lost (anything else)."""
    interval = max(orders.ttl_ms / 3000, 0.2)
    deadline = orders.expires_at / 1000
    while proc.poll() is None:
        try:
            proc.wait(timeout=next_renewal(deadline, orders.ttl_ms, interval))
            break
        except subprocess.TimeoutExpired:
            pass
        try:
            lease = client.items.renew(orders.item, orders.epoch)
            deadline = lease.expires_at / 1000
        except TransportError as err:
            if time.time() >= deadline:
                return f"unreachable past the deadline ({err.detail})"
            log(f"renewal failed, retrying: {err.detail}")
        except TenureError as err:  # the server refused: the claim is over
            return finished(client, orders) or f"{err.code}: {err.detail}"
    return "exited"


def supervise(orders: Orders) -> int:
    proc = spawn_guarded(orders.cmd, orders.env())
    log(f"started pid {proc.pid} as {orders.agent} on item {orders.item} (epoch {orders.epoch})")

    def forward(signum: int, _frame: FrameType | None) -> None:
        proc.signal(signum)  # to CMD's whole process group

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    with Client(orders.url, token=orders.token) as client:
        outcome = heartbeat(client, orders, proc)
        if outcome in FINISHED:
            log(f"the item is {outcome}; waiting for the command to end")
            code = exit_status(proc.wait())
        elif outcome != "exited":
            log(f"claim lost ({outcome}); stopping the command")
            code = stop(proc, orders.grace_s)
        else:
            code = exit_status(proc.returncode)
        if outcome == "exited":
            release(client, orders)
    log(f"command ended with status {code}")
    return code


def release(client: Client, orders: Orders) -> None:
    """Release the claim unless CMD completed (or cancelled) the item."""
    try:
        if client.items.get(orders.item).item.status in FINISHED:
            return
        client.items.release(orders.item)
        log("claim released")
    except TenureError as err:
        log(f"release failed ({err.code}); the claim will lapse on its own")


def read_orders(doc: dict[str, Any]) -> Orders:
    return Orders(**{name: doc[name] for name in Orders.__dataclass_fields__})


def main() -> int:
    return supervise(read_orders(json.loads(sys.stdin.read())))


if __name__ == "__main__":
    raise SystemExit(main())
