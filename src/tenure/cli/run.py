"""``tenure run KEY -- CMD…``: a command guarded by a lease, the successor of ``flock`` for cron
jobs and deploy scripts.

Acquire KEY in a session of this run's own (waiting up to ``--wait``; another run or lock of
the same principal is held like anyone's, see :func:`take`), start CMD guarded
(:mod:`tenure.cli.supervise`) with ``TENURE_LEASE_KEY`` and ``TENURE_LEASE_TOKEN`` (the fencing
token), and ``TENURE_URL``, ``TENURE_TOKEN`` (the bearer token) and ``TENURE_SESSION`` (so that
``tenure`` and the client inside CMD act as the holder), heartbeat while it runs, release when
it ends, exit with its status. A lost lease stops CMD (SIGTERM,
SIGKILL after ``--grace``) and exits 4; SIGINT, SIGTERM and SIGHUP are forwarded to CMD.
Without ``--json`` nothing of ours goes to stdout (CMD's output passes through untouched); with
``--json`` CMD's stdout goes to stderr and stdout gets one JSON document. docs/cli.md has the
details.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import click
from rich.status import Status
from rich.text import Text

from tenure.cli.app import cli, now_held
from tenure.cli.completion import complete_keys
from tenure.cli.context import Cli, cli_of, verb
from tenure.cli.durations import DURATION, format_duration
from tenure.cli.fence import fence_of
from tenure.cli.interrupt import interruptible
from tenure.cli.options import grace
from tenure.cli.render import LOST, Output, describe
from tenure.cli.supervise import (
    Guarded,
    Wakeup,
    exit_status,
    signal_name,
    spawn_guarded,
    stop,
)
from tenure.client import Client
from tenure.client._session import new_session
from tenure.client.lease import LeaseHandle
from tenure.core.models import Lease
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import LeaseHeld, LeaseLost

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TASK_CHARS = 120
CANNOT_EXECUTE, NOT_FOUND_STATUS = 126, 127  # a shell's statuses when CMD cannot be started


@dataclass
class Ending:
    """How CMD ended, and what happened to the lease meanwhile."""

    pid: int | None = None
    returncode: int | None = None  # Popen's: negative for a signal
    status: int = 0  # a shell's: 128 + n for signal n
    lost: str | None = None  # why the lease was lost
    forwarded: int | None = None  # the first signal passed on to CMD
    killed: bool = False  # CMD got SIGKILL after the grace period
    error: str | None = None  # why CMD could not be started


@verb(
    cli,
    "run",
    summary="Run a command while holding a lease on KEY (flock with a lease).",
    example="tenure run jobs/nightly --ttl 30s -- ./nightly.sh\n"
    "tenure run deploy/prod --wait 5m --task deploy-42 -- make deploy\n"
    "tenure run jobs/report --json -- python report.py",
)
@click.argument("key", shell_complete=complete_keys)
@click.argument("cmd", nargs=-1, required=True, metavar="-- CMD [ARGS]...")
@click.option("--ttl", type=DURATION, default="30s", show_default=True, help="Lease duration.")
@click.option("--wait", type=DURATION, help="Wait up to this long while someone else holds KEY.")
@click.option("--no-wait", is_flag=True, help="Fail at once if KEY is held (the default).")
@click.option("--task", help="What the lease serves (default: the command line).")
@click.option(
    "--fence",
    "fences",
    multiple=True,
    metavar="DB",
    help="Admit the token in this fence before CMD starts: a SQLite file, a postgresql:// "
    "or redis:// URL (repeatable).",
)
@grace("After SIGTERM, how long CMD has before SIGKILL.")
def run_command(
    key: str,
    cmd: tuple[str, ...],
    ttl: int,
    wait: int | None,
    no_wait: bool,
    task: str | None,
    fences: tuple[str, ...],
    grace: int,
) -> int:
    """Acquire KEY, run CMD while heartbeating the lease, release it when CMD ends and exit
    with CMD's status (128+N if signal N ended it). CMD finds the fencing token in
    $TENURE_LEASE_TOKEN and the key in $TENURE_LEASE_KEY; $TENURE_URL, $TENURE_TOKEN (the bearer
    token) and $TENURE_SESSION (this run's session) let `tenure` and the Python client inside
    CMD act as the holder.

    Each run is a session of its own: if KEY is held, also by another run or lock of your own
    principal, run exits 3 naming the holder and session, or with --wait waits for it. If the
    lease is lost, CMD gets SIGTERM, then SIGKILL after --grace, and run exits 4. SIGINT,
    SIGTERM and SIGHUP are forwarded to CMD (SIGKILL after --grace). If run dies, even by
    kill -9, CMD's process group is killed and the lease lapses after its ttl. With --json,
    CMD's stdout goes to stderr and stdout gets one JSON document when CMD ends.

    Each --fence admits the new token for KEY in that fence (the tenure_fence table of a
    database of yours, or Redis) before CMD starts, so a paused earlier holder's writes there
    are refused from the grant on; a refusal releases the lease and CMD does not run."""
    if wait is not None and no_wait:
        raise click.UsageError("--wait and --no-wait exclude each other")
    admits = [fence_of(spec) for spec in fences]
    run, argv = cli_of(), list(cmd)
    run.own_session(new_session("run"))
    started = time.monotonic()
    wakeup = Wakeup(FORWARDED)
    with ExitStack() as stack:
        stack.callback(wakeup.close)
        stack.enter_context(quiet_loss())
        lease = acquire(stack, run, key, ttl, task or default_task(argv), wait, wakeup.wake)
        for fence in admits:  # a refusal leaves the stack: the lease is released
            fence.admit(key, lease.token)
        with wakeup:
            ending = run_guarded(run, argv, lease, wakeup, grace / 1000)
        ending.lost = ending.lost or leave(stack, lease)
    return report(run, key, lease.token, argv, ending, time.monotonic() - started)


@contextmanager
def quiet_loss() -> Iterator[None]:
    """Drop the heartbeat's own warning about a lost lease: `run` reports it, with what it did
    to CMD (other warnings of the client, like a failed release, still show)."""
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
# Each run acquires in a session of its own (``Cli.own_session``), so the server refuses a second
# run of the same principal (a cron job overlapping its previous run) like anyone else's
# (``lease_held``), and ``--wait`` long-polls for it like for anyone's.
class Waiting:
    """The wait for the lease (``--wait``): until when, and a live line on stderr when it is a
    terminal."""

    def __init__(self, out: Output, wait_ms: int | None) -> None:
        self.started = time.monotonic()
        self.until = None if wait_ms is None else self.started + wait_ms / 1000
        self.live = wait_ms is not None and out.err.is_terminal and not out.json
        self._out = out
        self._status: Status | None = None
        self._holder: LeaseHeld | None = None

    def left_ms(self) -> int:
        """How long the next acquire may long-poll (0: not at all)."""
        if self.until is None:
            return 0
        return min(MAX_WAIT_MS, max(0, round((self.until - time.monotonic()) * 1000)))

    def check(self, err: LeaseHeld) -> None:
        """Raise ``err`` if the wait is over, else show it."""
        if self.until is None or time.monotonic() >= self.until:
            raise err
        self.show(err)

    def show(self, err: LeaseHeld) -> None:
        """Say who holds the key on the live line (a terminal only)."""
        if not self.live:
            return
        self._holder = err
        if self._status is None:
            self._status = self._out.err.status(self)
            self._status.start()

    def __rich__(self) -> Text:  # rendered on every refresh: the times shown stay current
        waited = format_duration(round((time.monotonic() - self.started) * 1000))
        held = describe(self._holder, sessions=True) if self._holder else ""
        return Text(f"waiting {waited}: {held}")

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()


def take(run: Cli, key: str, ttl_ms: int, task: str, waiting: Waiting) -> tuple[Lease, float]:
    """A new lease on ``key`` for this run's session, and when its request was sent (on
    :func:`time.monotonic`'s clock). The first try does not wait, so that a wait can show who
    holds the key; the next ones long-poll until ``--wait`` ends."""
    wait_ms: int | None = None
    while True:
        sent = time.monotonic()
        try:
            lease = run.client.acquire(key, ttl_ms, task, None, wait_ms)
        except LeaseHeld as err:
            waiting.check(err)
            wait_ms = max(1, waiting.left_ms())
            continue
        try:
            return confirmed(run.client, lease, sent)
        except BaseException:  # interrupted before the lease is held: it is nobody's
            with suppress(Exception):
                run.client.release(key, lease.token)
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
    stack: ExitStack,
    run: Cli,
    key: str,
    ttl_ms: int,
    task: str,
    wait_ms: int | None,
    wake: Callable[[], None],
) -> LeaseHandle:
    """Take ``key`` and enter its handle into ``stack`` (it heartbeats, and releases on exit);
    ``wake`` is called if the lease is lost."""
    waiting = Waiting(run.out, wait_ms)
    try:
        with interruptible():  # Ctrl-C, SIGTERM, SIGHUP while waiting: nothing stays held
            lease, sent = take(run, key, ttl_ms, task, waiting)
    finally:
        waiting.close()
    return stack.enter_context(Held(run.client, lease, sent, lambda _handle: wake()))


# running CMD ------------------------------------------------------------------------------------
def command_env(run: Cli, key: str, token: int) -> dict[str, str]:
    """Our environment, with the lease's key and fencing token (``TENURE_LEASE_KEY``,
    ``TENURE_LEASE_TOKEN``), and the server, bearer token and session of the holder
    (``TENURE_URL``, ``TENURE_TOKEN``, ``TENURE_SESSION``). ``TENURE_TOKEN`` is always a bearer
    token, never the fencing token."""
    env = dict(os.environ)
    env.update(
        TENURE_LEASE_KEY=key,
        TENURE_LEASE_TOKEN=str(token),
        TENURE_URL=run.url,
        TENURE_SESSION=run.session,
    )
    if run.token:
        env["TENURE_TOKEN"] = run.token
    else:
        env.pop("TENURE_TOKEN", None)
    return env


def run_guarded(
    run: Cli, argv: list[str], lease: LeaseHandle, wakeup: Wakeup, grace_s: float
) -> Ending:
    """Start CMD and supervise it until it ends."""
    sys.stderr.flush()
    streams = {"stdout": sys.stderr.fileno()} if run.out.json else {}
    try:
        proc = spawn_guarded(argv, command_env(run, lease.key, lease.token), **streams)
    except OSError as err:
        status = NOT_FOUND_STATUS if isinstance(err, FileNotFoundError) else CANNOT_EXECUTE
        return Ending(status=status, error=f"cannot run {argv[0]}: {err.strerror or err}")
    wakeup.watch(proc)
    return supervise(proc, lease, wakeup, grace_s)


def supervise(proc: Guarded, lease: LeaseHandle, wakeup: Wakeup, grace_s: float) -> Ending:
    """Wait for CMD to end; forward signals (SIGKILL ``grace_s`` after the first); stop CMD if
    the lease is lost."""
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


# the end ----------------------------------------------------------------------------------------
def report(
    run: Cli, key: str, token: int, argv: list[str], ending: Ending, elapsed_s: float
) -> int:
    """Say what happened (stderr, or one JSON document on stdout); run's exit code."""
    code = LOST if ending.lost else ending.status
    if run.out.json:
        run.out.emit(document(key, token, argv, ending, code, elapsed_s))
    elif ending.error or ending.lost:
        said = ending.error or lost_message(key, argv, ending)
        now = now_held(run, LeaseLost(key=key, token=token)) if ending.lost else None
        said += f"; {now}" if now else ""
        run.out.err.print(f"tenure: {said}", markup=False, soft_wrap=True)
    return code


def lost_message(key: str, argv: list[str], ending: Ending) -> str:
    what = f"{argv[0]} (pid {ending.pid})"
    if ending.killed:
        done = f"stopped {what}: SIGTERM, then SIGKILL after the grace period"
    elif ending.returncode == -signal.SIGTERM:
        done = f"stopped {what} with SIGTERM"
    else:
        done = f"{what} ended with status {ending.status}"
    return f"{key}: the lease was lost ({ending.lost}); {done}"


def document(
    key: str, token: int, argv: list[str], ending: Ending, code: int, elapsed_s: float
) -> dict[str, Any]:
    return {
        "key": key,
        "token": token,
        "exit_code": code,
        "lost": ending.lost is not None,
        "lost_reason": ending.lost,
        "command": argv,
        "pid": ending.pid,
        "status": ending.status,
        "signal": signal_name(ending.returncode),
        "forwarded": signal_name(-ending.forwarded) if ending.forwarded else None,
        "killed": ending.killed,
        "error": ending.error,
        "duration_ms": round(elapsed_s * 1000),
    }
