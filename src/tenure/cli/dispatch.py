"""``tenure dispatch ITEM -- CMD…``: claim an item for a new agent and run CMD as that agent
in the background, under a detached supervisor (:mod:`tenure.cli.agent`).

The claim belongs to a session of the agent's own (sent with the dispatch), which the
supervisor heartbeats and CMD inherits as ``TENURE_SESSION``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import click

from tenure.cli.app import cli
from tenure.cli.completion import complete_items
from tenure.cli.context import Cli, cli_of, verb
from tenure.cli.durations import DURATION
from tenure.cli.handover import hand_over
from tenure.cli.options import grace, takeover
from tenure.cli.render import pairs
from tenure.client import Client
from tenure.client._session import new_session
from tenure.core.text import when


def log_path(run: Cli, item: str, agent: str, given: str | None) -> Path:
    if given:
        return Path(given).resolve()
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{item}-{agent}")
    return run.settings.state_dir / "dispatch" / f"{safe}-{int(time.time())}.log"


def open_log(log: Path) -> int:
    """``log`` for appending: created ``0600``, or as it is if it exists (its mode is the
    user's)."""
    try:
        return os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return os.open(log, os.O_WRONLY | os.O_APPEND)


def start_supervisor(orders: dict[str, object], log: Path) -> tuple[int, int]:
    """The detached supervisor (own session, output to ``log``); returns its pid and the read
    end of the pipe it reports its start on (:mod:`tenure.cli.handover`)."""
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = open_log(log)  # the agent's output
    ready, said = os.pipe()
    with open(fd, "ab") as out:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tenure.cli.agent"],
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


@verb(
    cli,
    "dispatch",
    summary="Claim ITEM for a new agent and run CMD as it, in the background.",
    example="tenure dispatch 42 -- claude -p 'fix issue 42'\n"
    "tenure dispatch 42 --agent reviewer --ttl 1m -- ./review.sh\n"
    'tenure dispatch 42 --takeover --reason "its supervisor died" -- ./review.sh',
)
@click.argument("item", shell_complete=complete_items)
@click.argument("cmd", nargs=-1, required=True)
@click.option(
    "--agent",
    help="The agent's name under yours (default: agent-<instant>-<random>, never reused).",
)
@click.option("--ttl", type=DURATION, help="The claim's lease duration (default: the policy's).")
@click.option("--task", help="What the claim serves.")
@grace("After a lost claim, how long CMD has between SIGTERM and SIGKILL.")
@click.option("--log", "log_file", help="Where CMD's output goes (default: the state directory).")
@takeover(
    "Dispatch again an item whose claim lapsed (its supervisor died), was revoked or stalled."
)
def dispatch(
    item: str,
    cmd: tuple[str, ...],
    agent: str | None,
    ttl: int | None,
    task: str | None,
    grace: int,
    log_file: str | None,
    takeover: bool,
    reason: str | None,
) -> None:
    """Create a child agent of yours, claim ITEM for it in a session of its own (refused,
    naming the holder, if the item is already claimed), and start CMD in the background with
    TENURE_URL, TENURE_TOKEN (the agent's bearer token), TENURE_SESSION (the agent's session),
    TENURE_AGENT, TENURE_ITEM and TENURE_EPOCH in its environment, so that `tenure progress`,
    `tenure complete` and `tenure release "$TENURE_ITEM"` inside CMD act as the agent with that
    epoch. A detached supervisor renews the claim while CMD lives and releases it when CMD exits
    (unless CMD completed the item); this command holds the claim until the supervisor has
    started CMD, and fails, releasing it, if the supervisor cannot. If the supervisor is
    killed, CMD dies too and the claim lapses on its own: the item shows lapsed in your queue,
    and --takeover --reason … dispatches it again to a new agent (an item of yours or of your
    agents, or one whose assignee you may force-release); exit 3 without --takeover."""
    if takeover and not reason:
        raise click.UsageError("--takeover needs --reason (it is recorded with the transfer)")
    run = cli_of()
    run.out.takeover = "dispatch with --takeover --reason … to dispatch it again"
    session = new_session("agent", pid=False)
    granted = run.client.items.dispatch(item, agent, ttl, task, session, takeover, reason)
    log = log_path(run, item, granted.agent.name, log_file)
    orders = {
        "url": run.url, "token": granted.token, "agent": granted.agent.name, "item": item,
        "session": session, "epoch": granted.lease.token, "ttl_ms": granted.lease.ttl_ms,
        "expires_at": granted.lease.expires_at, "grace_s": grace / 1000, "cmd": list(cmd),
    }  # fmt: skip
    pid, ready = start_supervisor(orders, log)
    with Client(run.url, token=granted.token, session=session) as as_agent:
        why = hand_over(as_agent, item, granted.lease.token, granted.lease.ttl_ms, pid, ready)
    if why is not None:
        raise click.ClickException(
            f"the dispatch of {item} to {granted.agent.name} failed: {why}. The claim is "
            f"released; the supervisor's log: {log}"
        )
    doc = {**granted.to_dict(), "supervisor_pid": pid, "log": str(log)}
    token_id = granted.token.split("_")[1]  # tnr_<id>_<secret>: to revoke it
    doc["agent"] = {"name": granted.agent.name, "token_id": token_id}  # the token: agent only
    run.out.emit(
        doc,
        lambda: pairs(
            [
                ("item", item),
                ("agent", f"{granted.agent.name} (token {token_id})"),
                ("takeover", reason if takeover else None),
                ("session", session),
                ("epoch", granted.lease.token),
                ("expires", when(granted.lease.expires_at)),
                ("supervisor", f"pid {pid}"),
                ("log", str(log)),
            ]
        ),
    )
