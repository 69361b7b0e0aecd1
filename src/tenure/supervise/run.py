"""Run a command guarded by a lease: what ``tenure run KEY -- CMD…`` does, as a library.

:func:`run` acquires ``options.key`` in the client's session (waiting up to ``wait_ms``; another
run of the same principal is held like anyone's), admits the token in each fence, starts the
command guarded (:mod:`tenure.supervise.process`) with ``TENURE_LEASE_KEY`` and
``TENURE_LEASE_TOKEN`` (the fencing token), and ``TENURE_URL``, ``TENURE_TOKEN`` (the bearer
token) and ``TENURE_SESSION`` (so that ``tenure`` and the client inside it act as the holder),
heartbeats while it runs, releases when it ends and returns how it ended (:class:`Ending`). A
lost lease stops the command (SIGTERM, SIGKILL after ``grace_s``); the signals in ``forward``
are passed on to it. Call it from the main thread (it catches those signals, and the command's
parent-death signal is tied to the thread that starts it).
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from tenure.client import Client
from tenure.client._fences import Admits
from tenure.client.lease import LeaseHandle
from tenure.core.models import Lease
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import LeaseHeld, LeaseLost
from tenure.supervise.interrupt import interruptible
from tenure.supervise.process import Guarded, Wakeup, exit_status, spawn_guarded, stop

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TASK_CHARS = 120
CANNOT_EXECUTE, NOT_FOUND_STATUS = 126, 127  # a shell's statuses when CMD cannot be started


@dataclass(frozen=True)
class RunOptions:
    """What :func:`run` runs, and how.

    ``task`` defaults to the command line; ``fences`` admit the new token before the command
    starts (a refusal releases the lease and raises; the command does not run). ``url`` and
    ``token`` are what the command gets as ``TENURE_URL`` (default: the client's) and
    ``TENURE_TOKEN`` (``None``: none). ``stdout`` is a file descriptor for the command's
    standard output (default: ours). ``on_wait`` is called with each refusal while the run
    waits for the key (to show who holds it), and with ``None`` once the wait is over.
    """

    key: str
    cmd: Sequence[str]
    ttl_ms: int = 30_000
    wait_ms: int | None = None
    task: str | None = None
    grace_s: float = 10.0
    fences: Sequence[Admits] = ()
    url: str | None = None
    token: str | None = None
    stdout: int | None = None
    forward: tuple[int, ...] = FORWARDED
    env: dict[str, str] | None = field(default=None, repr=False)  # default: ours
    on_wait: Callable[[LeaseHeld | None], object] | None = field(default=None, repr=False)
    #: ``key`` is a semaphore of this many slots: the run holds one slot's lease (its key,
    #: ``KEY#slot/I``, is the command's ``TENURE_LEASE_KEY``)
    slots: int | None = None


@dataclass
class Ending:
    """How the command ended, and what happened to the lease meanwhile."""

    key: str = ""
    token: int = 0  # the fencing token the command ran under
    pid: int | None = None
    returncode: int | None = None  # Popen's: negative for a signal
    status: int = 0  # a shell's: 128 + n for signal n
    lost: str | None = None  # why the lease was lost
    forwarded: int | None = None  # the first signal passed on to the command
    killed: bool = False  # the command got SIGKILL after the grace period
    error: str | None = None  # why the command could not be started
    duration_ms: int = 0


def run(client: Client, options: RunOptions) -> Ending:
    """Acquire, run the command guarded, release; how it ended. Raises :class:`LeaseHeld` if
    the key stays held past ``wait_ms`` (at once without it), and what a fence raises."""
    argv = list(options.cmd)
    if not argv:
        raise ValueError("cmd: the command to run is empty")
    started = time.monotonic()
    wakeup = Wakeup(options.forward)
    with ExitStack() as stack:
        stack.callback(wakeup.close)
        stack.enter_context(quiet_loss())
        task = options.task or default_task(argv)
        lease = acquire(stack, client, options, task, wakeup.wake)
        for fence in options.fences:  # a refusal leaves the stack: the lease is released
            fence.admit(lease.key, lease.token)
        with wakeup:
            ending = run_guarded(client, options, lease, wakeup)
        ending.lost = ending.lost or leave(stack, lease)
    ending.key, ending.token = lease.key, lease.token
    ending.duration_ms = round((time.monotonic() - started) * 1000)
    return ending


@contextmanager
def quiet_loss() -> Iterator[None]:
    """Drop the heartbeat's own warning about a lost lease: the run reports it, with what it
    did to the command (other warnings of the client, like a failed release, still show)."""
    log = logging.getLogger("tenure.client")

    def only_others(record: logging.LogRecord) -> bool:
        return record.funcName != "_lost"

    log.addFilter(only_others)
    try:
        yield
    finally:
        log.removeFilter(only_others)


def leave(stack: ExitStack, lease: LeaseHandle) -> str | None:
    """Release the lease (closing ``stack``); why it was lost, if it was found lost by now."""
    lost = lease.lost  # also tells the handle the loss was seen: leaving would raise otherwise
    try:
        stack.close()
    except LeaseLost as err:  # lost in the instant between the check and the release
        return err.reason or "lost"
    return lease.lost_reason if lost else None


def default_task(argv: list[str]) -> str:
    """The command line, shortened, without control characters (the server refuses them)."""
    line = "".join(
        "?" if unicodedata.category(ch) == "Cc" else ch for ch in shlex.join(argv)
    ).strip()
    return (line[: TASK_CHARS - 1] + "…" if len(line) > TASK_CHARS else line) or "tenure run"


# acquiring --------------------------------------------------------------------------------------
class Waiting:
    """The wait for the lease: until when (``None``: no wait), and whom to tell."""

    def __init__(
        self, wait_ms: int | None, on_wait: Callable[[LeaseHeld | None], object] | None
    ) -> None:
        self.until = None if wait_ms is None else time.monotonic() + wait_ms / 1000
        self._on_wait = on_wait

    def left_ms(self) -> int:
        """How long the next acquire may long-poll (0: not at all)."""
        if self.until is None:
            return 0
        return min(MAX_WAIT_MS, max(0, round((self.until - time.monotonic()) * 1000)))

    def check(self, err: LeaseHeld) -> None:
        """Raise ``err`` if the wait is over, else tell ``on_wait``."""
        if self.until is None or time.monotonic() >= self.until:
            raise err
        if self._on_wait is not None:
            self._on_wait(err)


def take(
    client: Client, key: str, ttl_ms: int, task: str, waiting: Waiting, slots: int | None = None
) -> tuple[Lease, float]:
    """A new lease on ``key`` for the client's session, and when its request was sent (on
    :func:`time.monotonic`'s clock). The first try does not wait, so that a wait can show who
    holds the key; the next ones long-poll until the wait ends."""
    wait_ms: int | None = None
    while True:
        sent = time.monotonic()
        try:
            lease = client.acquire(key, ttl_ms, task, None, wait_ms, slots=slots)
        except LeaseHeld as err:
            waiting.check(err)
            wait_ms = max(1, waiting.left_ms())
            continue
        try:
            return confirmed(client, lease, sent)
        except BaseException:  # interrupted before the lease is held: it is nobody's
            with suppress(Exception):
                client.release(lease.key, lease.token)
            raise


def confirmed(client: Client, lease: Lease, sent: float) -> tuple[Lease, float]:
    """After a long poll the lease's deadline is unknown here: renew at once to learn one."""
    if time.monotonic() - sent <= lease.ttl_ms / 3000:
        return lease, sent
    sent = time.monotonic()
    return client.renew(lease.key, lease.token), sent


class Held(LeaseHandle):
    """A lease taken already, held with the client's heartbeat (renewed every ttl/3, loss
    reported through ``on_lost``, released on exit)."""

    def __init__(
        self, client: Client, lease: Lease, sent: float, on_lost: Callable[[Any], object]
    ) -> None:
        super().__init__(client, lease.key, lease.ttl_ms / 1000, lease.task, on_lost=on_lost)
        self._taken = (lease, sent)

    def _acquire(self) -> tuple[Lease, float]:  # the hook LeaseHandle.__enter__ calls
        return self._taken


def acquire(
    stack: ExitStack, client: Client, options: RunOptions, task: str, wake: Callable[[], None]
) -> LeaseHandle:
    """Take the key and enter its handle into ``stack`` (it heartbeats, and releases on exit);
    ``wake`` is called if the lease is lost. SIGTERM and SIGHUP while waiting end the wait by
    ``SystemExit(128+N)``, leaving nothing held."""
    waiting = Waiting(options.wait_ms, options.on_wait)
    try:
        with interruptible():
            lease, sent = take(client, options.key, options.ttl_ms, task, waiting, options.slots)
    finally:
        if options.on_wait is not None and options.wait_ms is not None:
            options.on_wait(None)
    return stack.enter_context(Held(client, lease, sent, lambda _handle: wake()))


# running the command ----------------------------------------------------------------------------
def command_env(
    client: Client, options: RunOptions, token: int, key: str | None = None
) -> dict[str, str]:
    """The command's environment (``options.env`` or ours) with the lease's key and fencing
    token (``TENURE_LEASE_KEY``, ``TENURE_LEASE_TOKEN``), and the server, bearer token and
    session of the holder (``TENURE_URL``, ``TENURE_TOKEN``, ``TENURE_SESSION``).
    ``TENURE_TOKEN`` is always a bearer token, never the fencing token."""
    env = dict(os.environ if options.env is None else options.env)
    env.update(
        TENURE_LEASE_KEY=key or options.key,
        TENURE_LEASE_TOKEN=str(token),
        TENURE_URL=options.url or client.url,
        TENURE_SESSION=client.session,
    )
    if options.token:
        env["TENURE_TOKEN"] = options.token
    else:
        env.pop("TENURE_TOKEN", None)
    return env


def run_guarded(client: Client, options: RunOptions, lease: LeaseHandle, wakeup: Wakeup) -> Ending:
    """Start the command and supervise it until it ends."""
    argv = list(options.cmd)
    sys.stderr.flush()
    streams = {} if options.stdout is None else {"stdout": options.stdout}
    try:
        env = command_env(client, options, lease.token, lease.key)
        proc = spawn_guarded(argv, env, **streams)
    except OSError as err:
        status = NOT_FOUND_STATUS if isinstance(err, FileNotFoundError) else CANNOT_EXECUTE
        return Ending(status=status, error=f"cannot run {argv[0]}: {err.strerror or err}")
    wakeup.watch(proc)
    return supervise(proc, lease, wakeup, options.grace_s)


def supervise(proc: Guarded, lease: LeaseHandle, wakeup: Wakeup, grace_s: float) -> Ending:
    """Wait for the command to end; forward signals (SIGKILL ``grace_s`` after the first); stop
    it if the lease is lost."""
    ending = Ending(pid=proc.pid)
    kill_at: float | None = None
    while proc.poll() is None:
        signals = wakeup.wait(None if kill_at is None else max(0.0, kill_at - time.monotonic()))
        if lease.lost:
            ending.lost = lease.lost_reason
            stop(proc, grace_s)
            break
        for sig in signals:
            proc.signal(sig)
            ending.forwarded = ending.forwarded or sig
            kill_at = kill_at or time.monotonic() + grace_s
        if kill_at is not None and time.monotonic() >= kill_at:
            proc.signal(signal.SIGKILL)
            kill_at = None
    ending.returncode = proc.wait()
    ending.status = exit_status(ending.returncode)
    ending.killed = ending.returncode == -signal.SIGKILL and (
        ending.lost is not None or ending.forwarded is not None
    )
    return ending
