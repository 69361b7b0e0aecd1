"""``tenure dispatch ITEM -- CMD…``: claim an item for a new agent and run CMD as that agent
in the background, under a detached supervisor. The dispatch itself is
:func:`tenure.supervise.dispatch`; this module parses the options and renders the grant.

The claim belongs to a session of the agent's own (sent with the dispatch), which the
supervisor heartbeats and CMD inherits as ``TENURE_SESSION``."""

from __future__ import annotations

from pathlib import Path

import click

from tenure.cli.app import cli
from tenure.cli.completion import complete_items
from tenure.cli.context import cli_of, verb
from tenure.cli.durations import DURATION
from tenure.cli.options import grace, takeover
from tenure.cli.render import pairs
from tenure.core.text import when
from tenure.errors import DispatchFailed
from tenure.supervise import DispatchOptions
from tenure.supervise import dispatch as start_dispatch


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
    here = cli_of()
    here.out.takeover = "dispatch with --takeover --reason … to dispatch it again"
    options = DispatchOptions(
        item, cmd, agent, ttl, task, grace / 1000, Path(log_file) if log_file else None,
        here.settings.state_dir / "dispatch", takeover, reason, here.url,
    )  # fmt: skip
    try:
        done = start_dispatch(here.client, options)
    except DispatchFailed as err:
        raise click.ClickException(err.detail) from None
    granted, pid, log = done.granted, done.supervisor_pid, done.log
    doc = {**granted.to_dict(), "supervisor_pid": pid, "log": str(log)}
    token_id = granted.token.split("_")[1]  # tnr_<id>_<secret>: to revoke it
    doc["agent"] = {"name": granted.agent.name, "token_id": token_id}  # the token: agent only
    here.out.emit(
        doc,
        lambda: pairs(
            [
                ("item", item),
                ("agent", f"{granted.agent.name} (token {token_id})"),
                ("takeover", reason if takeover else None),
                ("session", done.session),
                ("epoch", granted.lease.token),
                ("expires", when(granted.lease.expires_at)),
                ("supervisor", f"pid {pid}"),
                ("log", str(log)),
            ]
        ),
    )
