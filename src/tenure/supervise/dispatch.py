"""Dispatch an item: what ``tenure dispatch ITEM -- CMD…`` does, as a library.

:func:`dispatch` creates a child agent of the client's principal, claims the item for it in a
session of the agent's own, and starts a detached supervisor (:mod:`tenure.supervise.detached`)
that runs the command as the agent, renews the claim while it lives and, when it exits without
completing the item, releases the claim saying so (reason ``command_exited`` with the exit
status, kept by the server on the transfer and the events). Until the supervisor reports that
the command started, this process holds the claim (:mod:`tenure.supervise.handover`); if it
cannot start it, the claim is released and :class:`~tenure.errors.DispatchFailed` says why.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tenure.client import Client
from tenure.client._session import new_session
from tenure.core.claims import Dispatch
from tenure.errors import DispatchFailed
from tenure.settings import Settings
from tenure.supervise.handover import hand_over

SUPERVISOR = "tenure.supervise.detached"  # run as ``python -m``


@dataclass(frozen=True)
class DispatchOptions:
    """What :func:`dispatch` dispatches, and how.

    ``agent``: the agent's name under yours (default: ``agent-<instant>-<random>``, never
    reused); ``ttl_ms``: the claim's lease (default: the policy's); ``grace_s``: after a lost
    claim, how long the command has between SIGTERM and SIGKILL; ``log``: where the command's
    output goes (default: a new file in ``log_dir``, itself by default ``dispatch/`` in the
    state directory); ``takeover`` with a ``reason`` dispatches again an item whose claim
    lapsed, was revoked or stalled; ``url``: the server the agent talks to (default: the
    client's)."""

    item: str
    cmd: Sequence[str]
    agent: str | None = None
    ttl_ms: int | None = None
    task: str | None = None
    grace_s: float = 10.0
    log: Path | None = None
    log_dir: Path | None = None
    takeover: bool = False
    reason: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class Dispatched:
    """A dispatch whose command runs: the grant (the agent, its token and claim), the claim's
    session, the detached supervisor's pid and the log of the command's output."""

    granted: Dispatch
    session: str
    supervisor_pid: int
    log: Path


def dispatch(client: Client, options: DispatchOptions) -> Dispatched:
    """Claim the item for a new agent and start its command under a detached supervisor.
    Raises what the dispatch verb raises (the item held: :class:`~tenure.errors.LeaseHeld`…)
    and :class:`~tenure.errors.DispatchFailed` when the supervisor could not start the command
    (the claim is released)."""
    if not options.cmd:
        raise ValueError("cmd: the command to run is empty")
    session = new_session("agent", pid=False)
    granted = client.items.dispatch(
        options.item, options.agent, options.ttl_ms, options.task, session,
        options.takeover, options.reason,
    )  # fmt: skip
    url = options.url or client.url
    log = log_path(options, granted.agent.name)
    lease = granted.lease
    orders = {
        "url": url, "token": granted.token, "agent": granted.agent.name, "item": options.item,
        "session": session, "epoch": lease.token, "ttl_ms": lease.ttl_ms,
        "expires_at": lease.expires_at, "grace_s": options.grace_s, "cmd": list(options.cmd),
    }  # fmt: skip
    pid, ready = start_supervisor(orders, log)
    with Client(url, token=granted.token, session=session) as as_agent:
        why = hand_over(as_agent, options.item, lease.token, lease.ttl_ms, pid, ready)
    if why is not None:
        agent = granted.agent.name
        raise DispatchFailed(
            f"the dispatch of {options.item} to {agent} failed: {why}. The claim is released; "
            f"the supervisor's log: {log}",
            item=options.item, agent=agent, reason=why, log=str(log),
        )  # fmt: skip
    return Dispatched(granted, session, pid, log)


def log_path(options: DispatchOptions, agent: str) -> Path:
    if options.log is not None:
        return Path(options.log).resolve()
    folder = options.log_dir or Settings.from_env().state_dir / "dispatch"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{options.item}-{agent}")
    return folder / f"{safe}-{int(time.time())}.log"


def open_log(log: Path) -> int:
    """``log`` for appending: created ``0600``, or as it is if it exists (its mode is the
    user's)."""
    try:
        return os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return os.open(log, os.O_WRONLY | os.O_APPEND)


def start_supervisor(orders: dict[str, object], log: Path) -> tuple[int, int]:
    """The detached supervisor (own session, output to ``log``); returns its pid and the read
    end of the pipe it reports its start on (:mod:`tenure.supervise.handover`)."""
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = open_log(log)  # the agent's output
    ready, said = os.pipe()
    with open(fd, "ab") as out:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", SUPERVISOR],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=out,
                start_new_session=True,
                close_fds=True,
                pass_fds=(said,),
            )
        finally:
            os.close(said)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({**orders, "ready_fd": said}).encode())
    proc.stdin.close()
    return proc.pid, ready
