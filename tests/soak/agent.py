"""A simulated agent of the fleet soak, and the spawner that forks agents.

    python agent.py spawner

reads one JSON line per agent to start on stdin (``url``, ``token``, ``name``, ``log``, ``ttl``,
``stop``, ``until``, ``max_claims``, ``seed``, ``work``, ``scan``), forks it as its own OS
process and answers ``{"pid": …}`` on stdout; it ends when stdin closes. The spawner imports
tenure once, so starting an agent costs a fork instead of half a second of imports; each agent
is still a separate process the chaos loop can ``SIGKILL`` or ``SIGSTOP`` on its own.

An agent works through :class:`tenure.Client` until the stop file appears, its time is up
(``until``, wall clock) or it made ``max_claims`` claim attempts. Each round it picks an item:
from ``client.items.ready()`` (at random among the first 50, to spread the fleet), or, now and
then and whenever nothing is ready, an item ``in_progress`` whose lease ``lapsed`` (its holder
died or froze), which it claims with ``takeover=True`` and a reason. It holds the claim with
``client.items.work(...)`` (heartbeat every ttl/3), reports progress with the epoch, and
completes with the epoch and no ``op_id``, so a completion is accepted at most once. It tries to
complete even when it knows its claim was lost: a stale owner must be refused by the server,
not spared by the agent.

Every step is one JSON line appended to the agent's log with a single ``write`` (so a kill never
leaves half a line): ``start``, ``claim-sent``, ``claimed`` (epoch), ``refused`` (code),
``claim-unknown``, ``progress``, ``progress-stale``, ``lost`` (the client-side reason),
``complete-sent``, ``completed`` (``late`` when the reply came after the client's deadline),
``complete-stale``, ``complete-error``, ``complete-unknown``, ``left``, ``error``, ``exit``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import tenure
from tenure.client._wire import TransportError
from tenure.errors import LeaseLost, StaleToken, TenureError

MAX_AGENTS = 10_000  # the spawner forks at most this many


class Log:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, ev: str, **fields: Any) -> None:
        line = json.dumps({"ev": ev, "t": round(time.time(), 3), **fields}) + "\n"
        os.write(self.fd, line.encode())


def pick(client: tenure.Client, cfg: dict[str, Any], rng: random.Random) -> tuple[str, str] | None:
    """``(item, reason)`` to claim (a reason means a takeover), or ``None``."""
    ready = [] if rng.random() < cfg["scan"] else client.items.ready(limit=50)
    if ready:
        return rng.choice(ready).id, ""
    busy = client.items.list(status="in_progress", limit=1000)
    others = [i for i in busy if i.assignee != cfg["name"]]
    for item in rng.sample(others, min(3, len(others))):
        view = client.items.get(item.id)
        if view.item.status == "in_progress" and view.lease_state == "lapsed":
            return item.id, f"lapsed: {view.item.assignee} stopped answering"
    if not busy:  # nothing in progress: maybe something is ready after all
        ready = client.items.ready(limit=50)
        if ready:
            return rng.choice(ready).id, ""
    return None


def work_one(
    client: tenure.Client, cfg: dict[str, Any], rng: random.Random, log: Log, item: str, why: str
) -> None:
    takeover = bool(why)
    log("claim-sent", item=item, takeover=takeover)
    handle = client.items.work(
        item, ttl=cfg["ttl"], task=cfg["name"], takeover=takeover, reason=why or None
    )
    try:
        handle.__enter__()
    except TransportError as err:
        log("claim-unknown", item=item, error=str(err)[:200])
        return
    except TenureError as err:
        log("refused", item=item, code=err.code)
        return
    epoch = handle.epoch
    log("claimed", item=item, epoch=epoch)
    error: BaseException | None = None
    try:
        lo, hi = cfg["work"]
        steps = rng.randint(1, 3)
        for step in range(steps):
            time.sleep(rng.uniform(lo, hi) / steps)
            try:
                handle.progress(f"step {step + 1} of {steps}", percent=100 * step // steps)
                log("progress", item=item, epoch=epoch)
            except StaleToken as err:
                log("progress-stale", item=item, epoch=epoch, current=err.current_token)
                break
        if handle.lost:
            log("lost", item=item, epoch=epoch, reason=handle.lost_reason)
        log("complete-sent", item=item, epoch=epoch, margin=round(handle.deadline - mono(), 3))
        try:
            done = handle.complete(result={"by": cfg["name"], "epoch": epoch})
        except StaleToken as err:
            log(
                "complete-stale",
                item=item,
                epoch=epoch,
                current=err.current_token,
                holder=err.holder,
            )
        except TransportError as err:
            log("complete-unknown", item=item, epoch=epoch, error=str(err)[:200])
        except TenureError as err:
            log("complete-error", item=item, epoch=epoch, code=err.code)
        else:
            late = mono() > handle.deadline
            if late:
                log("late", item=item, epoch=epoch)
            log("completed", item=item, epoch=epoch, duplicate=done.duplicate, late=late)
    except BaseException as err:
        error = err
        raise
    finally:
        try:
            handle.__exit__(type(error) if error else None, error, None)
        except LeaseLost as err:
            log("left", item=item, epoch=epoch, lost=err.reason)
        else:
            log("left", item=item, epoch=epoch)


def mono() -> float:
    return time.monotonic()


def agent(cfg: dict[str, Any]) -> int:
    rng = random.Random(cfg["seed"])
    log = Log(cfg["log"])
    log("start", name=cfg["name"], pid=os.getpid())
    stop = Path(cfg["stop"])
    client = tenure.Client(cfg["url"], token=cfg["token"], timeout=10.0)
    claims = idle = 0
    try:
        while claims < cfg["max_claims"] and time.time() < cfg["until"] and not stop.exists():
            try:
                chosen = pick(client, cfg, rng)
            except TenureError as err:
                log("error", where="pick", error=f"{err.code}: {str(err)[:200]}")
                time.sleep(0.2)
                continue
            if chosen is None:
                idle += 1
                time.sleep(rng.uniform(0.2, 0.6))
                continue
            claims += 1
            try:
                work_one(client, cfg, rng, log, *chosen)
            except TenureError as err:
                log("error", where="work", error=f"{err.code}: {str(err)[:200]}")
    finally:
        log("exit", claims=claims, idle=idle)
        client.close()
    return 0


def spawner() -> int:
    """Fork one agent per line of stdin; answer its pid. Children are reaped by the kernel."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for n, line in enumerate(sys.stdin):
        if n >= MAX_AGENTS:
            break
        if not line.strip():
            continue
        cfg = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)
                os.dup2(devnull, 1)
                code = agent(cfg)
            except BaseException as err:
                print(f"agent {cfg.get('name')}: {type(err).__name__}: {err}", file=sys.stderr)
            finally:
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid, "name": cfg["name"]}), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["spawner"]:
        raise SystemExit(spawner())
    raise SystemExit(agent(json.loads(sys.argv[1])))
