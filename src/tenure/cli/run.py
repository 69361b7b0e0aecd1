"""``tenure run KEY -- CMD…``: a command guarded by a lease, the successor of ``flock`` for cron
jobs and deploy scripts. The run itself is :func:`tenure.supervise.run`; this module parses
the options, shows the wait on a terminal and reports how CMD ended.

Each run acquires in a session of its own (``Cli.own_session``), so the server refuses a second
run of the same principal (a cron job overlapping its previous run) like anyone else's
(``lease_held``), and ``--wait`` long-polls for it like for anyone's. Without ``--json``
nothing of ours goes to stdout (CMD's output passes through untouched); with ``--json`` CMD's
stdout goes to stderr and stdout gets one JSON document. docs/cli.md has the details.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import click
from rich.status import Status
from rich.text import Text

from tenure.cli.app import cli, now_held
from tenure.cli.completion import complete_keys
from tenure.cli.context import Cli, cli_of, verb
from tenure.cli.durations import DURATION, format_duration
from tenure.cli.fence import fence_of
from tenure.cli.options import grace
from tenure.cli.render import LOST, Output, describe
from tenure.client._session import new_session
from tenure.errors import LeaseHeld, LeaseLost
from tenure.supervise import Ending, RunOptions, run
from tenure.supervise.process import signal_name


@verb(
    cli,
    "run",
    summary="Run a command while holding a lease on KEY (flock with a lease).",
    example="tenure run jobs/nightly --ttl 30s -- ./nightly.sh\n"
    "tenure run deploy/prod --wait 5m --task deploy-42 -- make deploy\n"
    "tenure run jobs/report --json -- python report.py\n"
    "tenure run gpu --slots 3 --wait 10m -- python train.py",
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
@click.option(
    "--slots",
    type=click.IntRange(1, 1000),
    help="KEY is a semaphore of this many slots: up to that many runs hold it at once, each "
    "a slot of its own ($TENURE_LEASE_KEY is the slot's key, KEY#slot/I).",
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
    slots: int | None,
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
    here, argv = cli_of(), list(cmd)
    here.own_session(new_session("run"))
    waiting = Waiting(here.out, wait)
    options = RunOptions(
        key, argv, ttl, wait, task, grace / 1000, admits, here.url, here.token,
        sys.stderr.fileno() if here.out.json else None, on_wait=waiting.show, slots=slots,
    )  # fmt: skip
    ending = run(here.client, options)
    return report(here, argv, ending)


# the wait ---------------------------------------------------------------------------------------
class Waiting:
    """A live line on stderr while ``--wait`` waits for the key (a terminal only): who holds
    it and for how long we waited; gone once the wait is over."""

    def __init__(self, out: Output, wait_ms: int | None) -> None:
        self.started = time.monotonic()
        self.live = wait_ms is not None and out.err.is_terminal and not out.json
        self._out = out
        self._status: Status | None = None
        self._holder: LeaseHeld | None = None

    def show(self, err: LeaseHeld | None) -> None:
        """Say who holds the key (``None``: the wait is over, the line goes)."""
        if err is None:
            if self._status is not None:
                self._status.stop()
            return
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


# the end ----------------------------------------------------------------------------------------
def report(here: Cli, argv: list[str], ending: Ending) -> int:
    """Say what happened (stderr, or one JSON document on stdout); run's exit code."""
    code = LOST if ending.lost else ending.status
    if here.out.json:
        here.out.emit(document(argv, ending, code))
    elif ending.error or ending.lost:
        said = ending.error or lost_message(argv, ending)
        lost = LeaseLost(key=ending.key, token=ending.token)
        now = now_held(here, lost) if ending.lost else None
        said += f"; {now}" if now else ""
        here.out.err.print(f"tenure: {said}", markup=False, soft_wrap=True)
    return code


def lost_message(argv: list[str], ending: Ending) -> str:
    what = f"{argv[0]} (pid {ending.pid})"
    if ending.killed:
        done = f"stopped {what}: SIGTERM, then SIGKILL after the grace period"
    elif ending.returncode == -signal.SIGTERM:
        done = f"stopped {what} with SIGTERM"
    else:
        done = f"{what} ended with status {ending.status}"
    return f"{ending.key}: the lease was lost ({ending.lost}); {done}"


def document(argv: list[str], ending: Ending, code: int) -> dict[str, Any]:
    return {
        "key": ending.key,
        "token": ending.token,
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
        "duration_ms": ending.duration_ms,
    }
