"""The detached supervisor of a dispatched item: ``python -m tenure.supervise.detached``
(started by :func:`tenure.supervise.dispatch`, never by hand).

It reads its orders as one JSON document on stdin (so the agent's token is in neither argv
nor a file), acts in the agent's session (the claim's; CMD gets it as ``TENURE_SESSION``),
renews the claim at once (a claim that lapsed while it started is not worked:
CMD is not started), starts CMD as the agent, holds the claim with the client's heartbeat
(:class:`~tenure.client.work.WorkHandle`) while CMD lives, and when CMD exits releases the
claim unless CMD completed the item, saying why (reason ``command_exited`` with CMD's exit
status: the server keeps it on the transfer and the events). If the claim is lost, CMD gets
SIGTERM, then SIGKILL after the grace period. If this supervisor is killed, CMD dies with it
(see :func:`tenure.supervise.process.spawn_guarded`) and the claim lapses on its own.

The agent's token ends with its claim, however the claim ends: the server's reaper revokes it
within a second. A token refused (``unauthenticated``) therefore means the claim ended, but not
how (CMD may have completed the item and be winding down), so CMD is given the grace period to
end on its own before it is stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from tenure.client import Client
from tenure.client.work import WorkHandle
from tenure.core.models import Lease
from tenure.core.work import COMMAND_EXITED
from tenure.errors import TenureError, Unauthenticated
from tenure.supervise.handover import READY, report
from tenure.supervise.process import Guarded, Wakeup, exit_status, spawn_guarded, stop

FINISHED = ("done", "cancelled")
REVOKED = "the agent's token is revoked: its claim ended"
#: how a claim ends that CMD may have ended itself (its own complete or release: the lease reads
#: ``released``, and the agent's token is revoked a moment later), so CMD gets its grace period
BY_ITSELF = ("released", "unauthenticated")


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
    session: str = ""  # the agent's session: the claim's, and CMD's
    ready_fd: int = -1  # where ``tenure dispatch`` waits to hear that CMD started

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        env.update(
            TENURE_URL=self.url,
            TENURE_TOKEN=self.token,
            TENURE_SESSION=self.session,
            TENURE_AGENT=self.agent,
            TENURE_ITEM=self.item,
            TENURE_EPOCH=str(self.epoch),
        )
        return with_tenure_on_path(env)


def with_tenure_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the directory of this installation's ``tenure`` command first on ``PATH``
    when ``tenure`` is not found there (a virtualenv that was never activated), so that CMD's
    ``tenure complete "$TENURE_ITEM"`` runs the tenure that dispatched it."""
    here = Path(sys.executable).parent
    if shutil.which("tenure", path=env.get("PATH")) or not (here / "tenure").is_file():
        return env
    env["PATH"] = os.pathsep.join(x for x in (str(here), env.get("PATH")) if x)
    return env


def log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"[tenure dispatch {stamp}] {message}", file=sys.stderr, flush=True)


class HeldClaim(WorkHandle):
    """The claim ``tenure dispatch`` was granted, held here with the client's heartbeat
    (renewed every ttl/3, retried with backoff until the deadline, ``on_lost`` called when it is
    lost). Entering renews it at once: that gives a deadline on this process's clock (the grant
    was received by another process, a start-up ago), and a claim that lapsed while this
    supervisor started is found lost before CMD starts. The supervisor releases the claim and
    reports losses itself, so leaving does neither."""

    def __init__(self, client: Client, orders: Orders, on_lost: Callable[[Any], object]) -> None:
        super().__init__(client, orders.item, orders.ttl_ms / 1000, on_lost=on_lost)
        self._granted = orders.epoch

    def _acquire(self) -> tuple[Lease, float]:  # the hook WorkHandle.__enter__ calls
        return self._client._timed(self._renew_call(self._granted))

    def _should_release(self) -> bool:
        return False

    def _outcome(self, exc: BaseException | None) -> None:
        pass


def finished(client: Client, orders: Orders) -> str | None:
    """``done``/``cancelled`` if CMD finished the item itself."""
    try:
        status = client.items.get(orders.item).item.status
    except TenureError:
        return None
    return status if status in FINISHED else None


def hold(work: HeldClaim, proc: subprocess.Popen[bytes], wakeup: Wakeup) -> None:
    """Sleep until CMD exits or the claim is lost (the heartbeat's ``on_lost`` wakes us)."""
    wakeup.watch(proc)
    while proc.poll() is None and not work.lost:
        wakeup.wait()


def supervise(orders: Orders) -> int:
    with ExitStack() as stack:
        client = stack.enter_context(Client(orders.url, token=orders.token, session=orders.session))
        wakeup = stack.enter_context(Wakeup())
        try:
            work = stack.enter_context(HeldClaim(client, orders, lambda _work: wakeup.wake()))
        except Unauthenticated:
            return failed(orders, f"claim lost before the command started ({REVOKED})")
        except TenureError as err:
            why = f"{err.code}: {err.detail}"
            return failed(orders, f"claim lost before the command started ({why})")
        try:
            proc = spawn_guarded(orders.cmd, orders.env())
        except OSError as err:
            return failed(orders, f"the command could not be started: {err}")
        report(orders.ready_fd, READY)
        code, left_open = run_command(client, orders, work, wakeup, proc)
    if left_open:
        log(
            f"command ended with status {code} but did not complete items/{orders.item}: "
            "it goes back to open"
        )
    else:
        log(f"command ended with status {code}")
    return code


def failed(orders: Orders, why: str) -> int:
    """CMD was not started: say why in the log and to ``tenure dispatch`` (which releases the
    claim)."""
    log(why)
    report(orders.ready_fd, why)
    return 1


def run_command(
    client: Client, orders: Orders, work: HeldClaim, wakeup: Wakeup, proc: Guarded
) -> tuple[int, bool]:
    """Hold the claim while CMD (started as the agent) runs; CMD's exit status, and whether
    the item went back to open because CMD ended without completing it."""
    log(f"started pid {proc.pid} as {orders.agent} on item {orders.item} (epoch {orders.epoch})")

    def forward(signum: int, _frame: FrameType | None) -> None:
        proc.signal(signum)  # to CMD's whole process group

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    hold(work, proc, wakeup)
    if proc.poll() is not None:
        code = exit_status(proc.wait())
        return code, release(client, orders, work, code)
    status = finished(client, orders)
    if status is not None:
        log(f"the item is {status}; waiting for the command to end")
        return exit_status(proc.wait()), False
    if work.lost_reason in BY_ITSELF:
        why = REVOKED if work.lost_reason == "unauthenticated" else "the claim was released"
        log(f"{why}; the command has {orders.grace_s:g}s to end before it is stopped")
        try:
            return exit_status(proc.wait(orders.grace_s)), False
        except subprocess.TimeoutExpired:
            pass
    log(f"claim lost ({work.lost_reason}); stopping the command")
    return stop(proc, orders.grace_s), False


def release(client: Client, orders: Orders, work: HeldClaim, code: int) -> bool:
    """Release the claim unless CMD completed (or cancelled) the item or ended the claim itself;
    whether it was released here, the item going back to open. The release says why
    (``command_exited`` and CMD's status), for the dispatcher's queue and the item's page."""
    state = claim_state(client, orders)
    if state == "finished":
        return False
    if state == "ended":
        log("the command ended the claim itself (released, or it was taken from it)")
        return False
    try:
        work.release(COMMAND_EXITED, code)
        log("claim released")
        return True
    except Unauthenticated:
        log(f"{REVOKED} already (completed, released, taken over or force-released)")
    except TenureError as err:
        log(f"release failed ({err.code}); the claim will lapse on its own")
    return False


def claim_state(client: Client, orders: Orders) -> str:
    """``finished`` (CMD completed or cancelled the item), ``held`` (the agent's claim is still
    on: CMD left it), ``ended`` (the claim ended otherwise: CMD released it, or lost it), or
    ``unknown`` (the item could not be read: the release decides)."""
    try:
        view = client.items.get(orders.item)
    except Unauthenticated:  # the agent's token ends with its claim
        return "ended"
    except TenureError:
        return "unknown"
    if view.item.status in FINISHED:
        return "finished"
    mine = view.item.assignee == orders.agent and view.item.epoch == orders.epoch
    on = view.lease is not None and view.lease.state in ("live", "expired")  # not ended by anyone
    return "held" if mine and on else "ended"


def read_orders(doc: dict[str, Any]) -> Orders:
    return Orders(**{name: doc[name] for name in Orders.__dataclass_fields__ if name in doc})


def main() -> int:
    return supervise(read_orders(json.loads(sys.stdin.read())))


if __name__ == "__main__":
    raise SystemExit(main())
