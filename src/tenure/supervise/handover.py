"""The hand-over between :func:`tenure.supervise.dispatch` and the supervisor it starts.

The claim is granted to the dispatching process; the detached supervisor
(:mod:`tenure.supervise.detached`) takes it over once it has started, which on a loaded machine
may take longer than a short ttl. Until the supervisor reports on a pipe that it holds the claim
and CMD runs, the dispatching process renews the claim itself (every ttl/3, as the agent), so a
slow start never lets a fresh claim lapse. The supervisor writes one line on the pipe: ``ok``, or
why it could not start; an end of file without a line means it died. Either failure releases the
claim (the item goes back to open) and the dispatch fails naming the reason and the log.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time

from tenure.client import Client
from tenure.errors import TenureError

READY = "ok"
#: how long a supervisor may take to start CMD before the dispatch gives up on it
START_BOUND_S = 60.0


def report(fd: int, line: str) -> None:
    """The supervisor's side: tell the dispatching process how the start went, once."""
    if fd < 0:
        return
    with contextlib.suppress(OSError):
        os.write(fd, line.replace("\n", " ").encode()[:4000] + b"\n")
    with contextlib.suppress(OSError):
        os.close(fd)


def hand_over(agent: Client, item: str, epoch: int, ttl_ms: int, pid: int, fd: int) -> str | None:
    """The dispatching side: hold the claim until the supervisor ``pid`` reports on ``fd``;
    ``None`` once it holds the claim, else why it did not start (the claim released, the
    supervisor killed if it still ran)."""
    why = _wait(agent, item, epoch, ttl_ms, fd)
    if why is None:
        return None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)  # it reported a failure, or hung: it must not start CMD now
    with contextlib.suppress(TenureError):
        agent.items.release(item, epoch)
    return why


def _wait(agent: Client, item: str, epoch: int, ttl_ms: int, fd: int) -> str | None:
    every = max(ttl_ms / 3000, 0.05)
    bound = time.monotonic() + START_BOUND_S
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        line = b""
        while time.monotonic() < bound:
            readable, _, _ = select.select([pipe], [], [], every)
            if not readable:
                try:
                    agent.items.renew(item, epoch)
                except TenureError as err:
                    return f"the claim was lost while the supervisor started ({err.code})"
                continue
            chunk = pipe.read(4096)
            if not chunk:
                return "the supervisor ended before it started the command"
            line += chunk
            if line.endswith(b"\n"):
                said = line.decode(errors="replace").strip()
                return None if said == READY else said
    return f"the supervisor did not start the command within {START_BOUND_S:g} s"
