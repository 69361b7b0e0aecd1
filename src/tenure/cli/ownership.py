"""The authority's item verbs at the top level: ``force-release`` (end someone's claim; the
item stays theirs, revoked) and ``reassign`` (move it to someone else). Each is one call of
``client.items``; who may use them is the table in docs/claims.md (an admin, a supervisor for
non-admins' work, or an ancestor of the holder or assignee; others get exit 1)."""

from __future__ import annotations

import click

from tenure.cli.app import cli
from tenure.cli.completion import ITEM
from tenure.cli.context import cli_of, verb
from tenure.core.text import held_by

REASON = click.option(
    "--reason", required=True, help="Why (recorded with the transfer and the event)."
)


@verb(
    cli,
    "force-release",
    summary="End someone's claim on ITEM (admin, supervisor or ancestor); it stays revoked.",
    example='tenure force-release 42 --reason "jo/agent-3 is looping"\n'
    'tenure force-release 42 --reason "wrong branch" --json',
)
@ITEM
@REASON
def force_release(item_id: str, reason: str) -> None:
    """End the live claim on ITEM as an authority: its epoch is dead from now on (progress and
    completion with it exit 4), and the item stays assigned to its holder but reads revoked:
    even the holder needs `tenure claim ITEM --takeover --reason …` to claim it again, unless
    you `tenure reassign` it. The verb for items: `tenure lock force-release` refuses item
    keys."""
    run = cli_of()
    result = run.client.items.force_release(item_id, reason)
    lease, item = result.lease, result.item
    holder = held_by(lease.holder, lease.session)
    kept = f"; it stays assigned to {item.assignee}, revoked" if item.assignee else ""
    run.out.emit(
        result.to_dict(),
        f"{item_id}: force-released epoch {lease.token}, the claim of {holder}{kept}",
    )


@verb(
    cli,
    "reassign",
    summary="Move ITEM to PRINCIPAL (admin, supervisor or ancestor of the assignee).",
    example='tenure reassign 42 bob --reason "jo is on leave"\n'
    'tenure reassign 42 jo/reviewer --reason "needs a review first" --json',
)
@ITEM
@click.argument("principal")
@REASON
def reassign(item_id: str, principal: str, reason: str) -> None:
    """Move ITEM to PRINCIPAL as an authority, in one step: any live claim on it ends and its
    epoch is dead, and PRINCIPAL becomes its assignee (a `reassigned` transfer with your
    reason). PRINCIPAL then claims it without --takeover. Exit 1 if you may not, 5 if there is
    no such principal or item, 3 if the item is done or cancelled."""
    run = cli_of()
    item = run.client.items.reassign(item_id, principal, reason)
    run.out.emit(
        {"item": item.to_dict()},
        f"{item_id}: reassigned to {item.assignee}; it is {item.status}",
    )
