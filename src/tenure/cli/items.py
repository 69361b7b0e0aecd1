"""The item verbs at the top level (``claim``, ``renew``, ``extend``, ``release``, ``progress``,
``complete``, ``cancel``, ``queue``, ``ready``, ``brief``) and ``items add|ls|show``; the
authority's item verbs (``force-release``, ``reassign``) are in :mod:`tenure.cli.ownership`.

Each one is one call of ``client.items``. The CLI remembers the epoch of the items it claimed
(under the item's lease key ``items/<id>``), so ``progress``, ``complete``, ``renew``,
``extend`` and ``release`` send it without the user typing it; ``--epoch`` overrides it. Inside
a command started by ``tenure dispatch``, ``$TENURE_EPOCH`` stands for the epoch of
``$TENURE_ITEM`` when none is remembered. Claims are the CLI session's (see
:mod:`tenure.cli.context`): claiming again renews.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Group
from rich.text import Text

from tenure.cli.app import cli
from tenure.cli.completion import ITEM, complete_items
from tenure.cli.context import Cli, cli_of, verb
from tenure.cli.durations import DURATION
from tenure.cli.locks import parse_json_object
from tenure.cli.ops import event_line
from tenure.cli.options import takeover
from tenure.cli.render import now_ms, pairs, table
from tenure.core.items import STATUSES, Item, ItemView, Transfer, item_key
from tenure.core.models import Lease
from tenure.core.states import AHEAD, State, lease_word, say
from tenure.core.text import clock, held_by, relative, when
from tenure.core.work import PARKED
from tenure.verbs import items as iv

EPOCH_HELP = "The claim's epoch (default: the one remembered from your claim)."
EPOCH = click.option("--epoch", type=int, help=EPOCH_HELP)


# rendering ----------------------------------------------------------------------------------
def progress_text(item: Item) -> str | None:
    """``40% tests pass (jo, 2m ago)``."""
    report = item.progress
    if not report:
        return None
    percent = f"{report['percent']}% " if report.get("percent") is not None else ""
    by = report.get("by")
    at = report.get("at", item.progress_at)
    tail = ", ".join(x for x in (by, relative(at) if at else None) if x)
    return f"{percent}{report.get('message', '')}" + (f" ({tail})" if tail else "")


def attempts_text(item: Item) -> str:
    """``parked after 3 attempts: lapsed, lapsed, command_exited (status 1)``, or ``2 (1 failed:
    lapsed)``."""
    if item.status == PARKED:
        return item.parked_words()
    said = ", ".join(f.words() for f in item.failures)
    return f"{item.attempts}" + (f" ({len(item.failures)} failed: {said})" if said else "")


def item_pairs(
    item: Item, lease: Lease | None = None, lease_state: str | State | None = None
) -> list[tuple[str, Any]]:
    state = lease_state if isinstance(lease_state, State) else State(lease_state or "none")
    rows: list[tuple[str, Any]] = [
        ("id", item.id),
        ("title", item.title),
        ("status", item.status),
        ("priority", item.priority),
        ("labels", ", ".join(item.labels)),
        ("parent", item.parent),
        ("assignee", item.assignee),
        ("epoch", item.epoch or None),
    ]
    if lease is not None:
        rows += [("lease", lease_words(lease, state)), ("task", lease.task)]
    elif state.word != "none":
        rows.append(("lease", say(state, now_ms())))
    rows.append(("progress", progress_text(item)))
    if item.attempts or item.failures:
        rows.append(("attempts", attempts_text(item)))
    if item.result is not None:
        rows.append(("result", json.dumps(item.result)))
    rows.append(("created", f"{clock(item.created_at)} by {item.created_by}"))
    rows.append(("updated", when(item.updated_at)))
    if item.body:
        rows.append(("body", item.body))
    return rows


#: what follows a state that is not live: what it means for whoever claims next
_NEXT = {
    "revoked": "; force-released: a takeover needs a reason",
    "reassigned": "; its new assignee claims it without a takeover",
}


def lease_words(lease: Lease, state: State | None = None) -> str:
    """``live, held by jo, expires …``; ``revoked 2m ago by root: stuck; was held by jo;
    force-released: …``: the state's words (:func:`tenure.core.states.say`) and the holder."""
    holder = held_by(lease.holder, lease.session)
    state = state if state is not None and state.word != "none" else lease_word(lease)
    if state.word in AHEAD:
        quiet = say(state, now_ms()).partition(",")[0] if state.word == "stalled" else "live"
        return f"{quiet}, held by {holder}, expires {when(lease.expires_at)}"
    return f"{say(state, now_ms())}; was held by {holder}{_NEXT.get(state.word, '')}"


def item_table(
    item: Item, lease: Lease | None = None, lease_state: str | State | None = None
) -> Any:
    return pairs(item_pairs(item, lease, lease_state))


def items_table(items: Iterable[Item], title: str | None = None) -> Any:
    return table(
        ["ID", "PRI", "STATUS", "ASSIGNEE", "LABELS", "TITLE"],
        [(x.id, x.priority, x.status, x.assignee, ", ".join(x.labels), x.title) for x in items],
        title=title,
    )


def views_table(views: Iterable[ItemView], title: str | None = None) -> Any:
    """The items with their claims; LEASE: the state in words, its time in its tense
    (``live, expires in 4m``, ``lapsed 2m ago``, ``reassigned 5s ago to bob by root: rota``)."""
    now = now_ms()
    return table(
        ["ID", "PRI", "ASSIGNEE", "LEASE", "EPOCH", "PROGRESS", "TITLE"],
        [
            (
                v.item.id,
                v.item.priority,
                v.item.assignee,
                v.item.parked_words() if v.item.status == PARKED else say(v.state, now),
                v.item.epoch or None,
                progress_text(v.item),
                v.item.title,
            )
            for v in views
        ],
        title=title,
    )


def transfers_table(transfers: Sequence[Transfer]) -> Any:
    return table(
        ["AT", "REASON", "FROM", "TO", "EPOCH", "ACTOR", "NOTE"],
        [
            (clock(t.at), t.reason, t.from_ or "∅", t.to or "∅", t.epoch, t.actor, note_of(t))
            for t in transfers
        ],
        title="transfers",
    )


def note_of(t: Transfer) -> str | None:
    """The transfer's note; a release by a supervisor whose command exited says its status."""
    if t.exit_status is not None:
        return f"{t.note}: the command ended with status {t.exit_status}"
    return t.note


def view_table(view: ItemView) -> Any:
    shown = item_table(view.item, view.lease, view.state)
    if not view.transfers:
        return shown
    return Group(shown, Text(""), transfers_table(view.transfers))


def lease_line(item_id: str, lease: Lease) -> str:
    holder = held_by(lease.holder, lease.session, lease.task)
    return f"{item_id}: epoch {lease.token}, held by {holder} until {when(lease.expires_at)}"


def parse_json(value: str | None, name: str) -> Any:
    """Any JSON value (``--result``); a usage error naming the option otherwise."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"not JSON: {err}", param_hint=name) from None


def epoch_of(run: Cli, item_id: str, given: int | None) -> int:
    """``--epoch`` if given, else the epoch remembered from the claim (a usage error if none)."""
    return run.token_for(item_key(item_id), given, "--epoch")


# the claim verbs ----------------------------------------------------------------------------
@verb(
    cli,
    "claim",
    summary="Claim an item: take its lease and become its assignee.",
    example="tenure claim 42 --ttl 5m --task pr-1234\n"
    'tenure claim 42 --takeover --reason "jo is on leave"\n'
    "tenure claim 42 --json",
)
@ITEM
@click.option("--ttl", type=DURATION, help="Lease duration (90s, 5m, 2h; default: the policy's).")
@click.option("--task", help="What you are doing (shown to whoever is refused).")
@takeover("Take over an item whose claim lapsed, stalled or was force-released (revoked).")
def claim(
    item_id: str, ttl: int | None, task: str | None, takeover: bool, reason: str | None
) -> None:
    """Claim ITEM: take the lease on items/ITEM, become its assignee, set it in_progress and
    print the epoch, which the CLI remembers for progress and complete. Re-claiming your own
    live claim from the same session (your CLI session, or $TENURE_SESSION) renews it and keeps
    the epoch. Exit 3 if someone else holds it, another session of yours included (a
    dispatched agent, a script), or if it is assigned to someone whose lease lapsed, or its
    claim was force-released (revoked, yours included): then --takeover --reason … moves it to
    you. --takeover without --reason is refused (exit 2)."""
    if takeover and not reason:
        raise click.UsageError("--takeover needs --reason (it is recorded with the transfer)")
    run = cli_of()
    result = run.client.items.claim(item_id, ttl, task, takeover, reason)
    run.remember(item_key(item_id), result.lease.token)
    run.out.emit(result.to_dict(), lambda: item_table(result.item, result.lease))


@verb(
    cli,
    "renew",
    summary="Renew your claim's lease.",
    example="tenure renew 42\ntenure renew 42 --ttl 10m --epoch 7",
)
@ITEM
@EPOCH
@click.option("--ttl", type=DURATION, help="A new duration (default: the lease's own).")
def renew(item_id: str, epoch: int | None, ttl: int | None) -> None:
    """Renew your lease on ITEM from now. Exit 4 if the claim is lost (it lapsed and someone
    claimed it, or it was force-released or completed), 3 if someone else holds it."""
    run = cli_of()
    lease = run.client.items.renew(item_id, epoch_of(run, item_id, epoch), ttl)
    run.remember(item_key(item_id), lease.token)
    run.out.emit(iv.RENEW_ITEM.wire(lease), lambda: lease_line(item_id, lease))


@verb(
    cli,
    "extend",
    summary="Push your claim's deadline out (capped by policy).",
    example="tenure extend 42 2h\ntenure extend 42 30m --epoch 7 --json",
)
@ITEM
@click.argument("by", type=DURATION)
@EPOCH
def extend(item_id: str, by: int, epoch: int | None) -> None:
    """Set your claim's deadline to now + BY. Never shortens it; says when the policy capped
    it."""
    run = cli_of()
    result = run.client.items.extend(item_id, by_ms=by, epoch=epoch_of(run, item_id, epoch))
    capped = f" (capped: asked {clock(result.requested_until)})" if result.capped else ""
    run.out.emit(result.to_dict(), f"{item_id} now expires at {when(result.granted_until)}{capped}")


@verb(
    cli,
    "release",
    summary="Release your claim: the item reopens (idempotent).",
    example="tenure release 42",
)
@ITEM
@click.option("--epoch", type=int, help="Release only this claim (default: the remembered one).")
def release(item_id: str, epoch: int | None) -> None:
    """End your lease on ITEM, retire your assignee edge and reopen the item for others.
    Only the claim of the remembered epoch (or --epoch) ends: if the item was claimed again
    since, nothing changes. Without one, your session's claim ends. Releasing what you no
    longer hold is not an error."""
    run = cli_of()
    known = epoch if epoch is not None else run.remembered(item_key(item_id))
    result = run.client.items.release(item_id, known)
    run.remember(item_key(item_id), None)
    said = "released" if result.released else "no live claim of yours to release"
    if not result.released and known is not None and known != result.item.epoch:
        said = f"epoch {known} is not the item's (it is {result.item.epoch}): nothing released"
    run.out.emit(result.to_dict(), f"{item_id}: {said}; it is {result.item.status}")


@verb(
    cli,
    "progress",
    summary="Report progress on your claim (fenced by its epoch).",
    example='tenure progress 42 "tests pass" --percent 60\n'
    'tenure progress 42 "migrated" --data \'{"rows": 1200}\' --epoch 7',
)
@ITEM
@click.argument("message")
@click.option("--percent", type=click.IntRange(0, 100), help="How far along (0-100).")
@click.option("--data", help="Small JSON object stored with the report.")
@EPOCH
def progress(
    item_id: str, message: str, percent: int | None, data: str | None, epoch: int | None
) -> None:
    """Record MESSAGE as ITEM's progress. Accepted only with the item's current epoch: exit 4
    if someone took the item over since your claim. Progress is not a heartbeat."""
    run = cli_of()
    extra = parse_json_object(data, "--data")
    item = run.client.items.progress(
        item_id, epoch_of(run, item_id, epoch), message, percent, extra
    )
    run.out.emit(iv.PROGRESS_ITEM.wire(item), f"{item_id}: {progress_text(item)}")


@verb(
    cli,
    "complete",
    summary="Complete your claim (fenced by its epoch).",
    example="tenure complete 42\n"
    "tenure complete 42 --result '{\"pr\": 1234}' --op-id deploy-42-done",
)
@ITEM
@click.option("--result", help="The result, as JSON (any value).")
@click.option("--op-id", help="Makes a retried completion harmless: a repeat changes nothing.")
@click.option(
    "--follow-up",
    "follow_ups",
    multiple=True,
    metavar="TITLE",
    help="Create an item with this title under ITEM, with the completion (repeat for more).",
)
@EPOCH
def complete(
    item_id: str,
    result: str | None,
    op_id: str | None,
    follow_ups: tuple[str, ...],
    epoch: int | None,
) -> None:
    """Mark ITEM done with an optional RESULT, ending your lease and assignee edge. Accepted
    only with the item's current epoch: exit 4 if someone took the item over since. Each
    --follow-up TITLE creates an open item under ITEM in the same transaction: all or none,
    once per --op-id, and never from a stale epoch."""
    run = cli_of()
    value = parse_json(result, "--result")
    done = run.client.items.complete(
        item_id, epoch_of(run, item_id, epoch), value, op_id, list(follow_ups) or None
    )
    run.remember(item_key(item_id), None)
    again = " (already, with this --op-id)" if done.duplicate else ""
    made = "".join(f"\nfollow-up {x.id}: {x.title}" for x in done.follow_ups)
    run.out.emit(done.to_dict(), f"{item_id}: {done.item.status}{again}{made}")


@verb(
    cli,
    "cancel",
    summary="Cancel an item (assignee, creator, supervisor, ancestor or admin).",
    example='tenure cancel 42 --reason "duplicate of 41"',
)
@ITEM
@click.option("--reason", required=True, help="Why (recorded with the transfer).")
def cancel(item_id: str, reason: str) -> None:
    """Set ITEM cancelled: any claim on it ends and its epoch is dead from now on."""
    run = cli_of()
    item = run.client.items.cancel(item_id, reason)
    run.remember(item_key(item_id), None)
    run.out.emit(iv.CANCEL_ITEM.wire(item), f"{item_id}: {item.status} ({reason})")


# the views ----------------------------------------------------------------------------------
@verb(
    cli,
    "queue",
    summary="The items assigned to you (or PRINCIPAL) and its agents.",
    example="tenure queue\ntenure queue jo --json",
)
@click.argument("principal", required=False)
def queue(principal: str | None) -> None:
    """The items assigned to PRINCIPAL (default: you) and to the agents it dispatched, with
    their lease state and its time: live (when it expires), stalled (live, but no progress
    for the policy's stall_after), lapsed (its holder stopped renewing: since when), revoked
    (force-released: by whom, why; a takeover needs a reason) or reassigned (moved to its
    assignee, who has not claimed it yet). Below: the items your agents' commands left open
    lately (a `tenure dispatch` whose command ended without completing its item), while they
    stay open."""
    from tenure.cli.exited_dispatches import left_open, left_open_lines

    run = cli_of()
    views = run.client.items.queue(principal)
    returned = left_open(run, principal)
    shown = (views_table(views) if views else Text("nothing assigned"), left_open_lines(returned))
    run.out.emit(
        {"items": [v.to_dict() for v in views], "left_open": returned},
        lambda: Group(*(x for x in shown if x)),
    )


@verb(
    cli,
    "ready",
    summary="Open, unclaimed items, most urgent first.",
    example="tenure ready\ntenure ready --limit 5 --json",
)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def ready(limit: int) -> None:
    """Open, unassigned, unleased items by priority (0 first), then age."""
    run = cli_of()
    items = run.client.items.ready(limit)
    run.out.emit(
        {"items": [x.to_dict() for x in items]},
        lambda: items_table(items) if items else "nothing ready",
    )


def briefing_view(doc: Any) -> Any:
    parts: list[Any] = [Text(f"briefing for {doc.principal}")]
    parts += [Text(""), views_table(doc.carrying, "carrying")] if doc.carrying else []
    parts += [Text(""), views_table(doc.stalled, "stalled")] if doc.stalled else []
    parts += [Text(""), views_table(doc.lapsed, "no longer live")] if doc.lapsed else []
    if doc.parked:
        title = "parked: reopen with `tenure items reopen ITEM --reason ...`"
        parts += [Text(""), views_table(doc.parked, title)]
    if doc.happened:
        parts += [Text(""), Text("since your last briefing:")]
        parts += [Text(f"  {event_line(e)}") for e in doc.happened]
    parts += [Text(""), items_table(doc.ready, "ready")] if doc.ready else []
    if len(parts) == 1:
        parts.append(Text("nothing carried, nothing happened, nothing ready"))
    return Group(*parts)


@verb(
    cli,
    "brief",
    summary="What you carry, what lapsed, what happened, what is ready.",
    example="tenure brief\ntenure brief --ready 10 --json",
)
@click.option(
    "--ready",
    "top",
    type=click.IntRange(0, 100),
    default=5,
    show_default=True,
    help="How many ready items to show.",
)
def brief(top: int) -> None:
    """Your briefing: the items you carry, the claims of yours and your agents that stalled
    (live, without progress for a while), those whose lease lapsed or was revoked, what
    happened to your work since your last briefing (expiries, takeovers, force-releases,
    reassignments, stalls, cancellations, completions by your agents), and the top of the
    ready queue. Moves your briefing cursor."""
    run = cli_of()
    doc = run.client.items.briefing(top)
    run.out.emit(doc.to_dict(), lambda: briefing_view(doc))


# items add | ls | show ----------------------------------------------------------------------
@cli.group(
    epilog='\b\nExamples:\n  tenure items add "Fix the flaky test" --priority 1 --label ci\n'
    "  tenure items ls --status open\n  tenure items show 42"
)
def items() -> None:
    """Items of the shared work queue: add, list, show."""


@verb(
    items,
    "add",
    summary="Add an item to the queue.",
    example='tenure items add "Fix the flaky test" --priority 1 --label ci --label flaky\n'
    'tenure items add "Write the release notes" --id notes-1.4 --parent release-1.4 --json\n'
    'tenure items add "Fix the tests it broke" --parent 42 --parent-epoch 7',
)
@click.argument("title")
@click.option("--body", help="The details.")
@click.option("--priority", type=click.IntRange(0, 1000), help="0 is the most urgent (default 2).")
@click.option("--label", "labels", multiple=True, help="A label (repeat for more).")
@click.option("--parent", help="The item this one is part of.", shell_complete=complete_items)
@click.option(
    "--parent-epoch",
    type=int,
    help="Create it only while this is the parent's current epoch, held by you (exit 4 if stale).",
)
@click.option("--id", "item_id", help="The item's id (default: a random it-…).")
def items_add(
    title: str,
    body: str | None,
    priority: int | None,
    labels: tuple[str, ...],
    parent: str | None,
    parent_epoch: int | None,
    item_id: str | None,
) -> None:
    """Add an open, unassigned item and print its id. With --parent-epoch (and --parent) it is
    fenced on the parent like progress: only the holder of the parent's current epoch adds it,
    so a worker that lost the parent cannot fan out work."""
    run = cli_of()
    item = run.client.items.create(
        title, body, priority, labels or None, parent, item_id, parent_epoch
    )
    run.out.emit(iv.CREATE_ITEM.wire(item), f"added {item.id}: {item.title}")


@verb(
    items,
    "ls",
    summary="List items.",
    example="tenure items ls\ntenure items ls --status in_progress --assignee jo --json",
)
@click.option("--status", type=click.Choice(STATUSES), help="Only items in this status.")
@click.option("--assignee", help="Only items assigned to this principal.")
@click.option("--label", help="Only items with this label.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True)
def items_ls(status: str | None, assignee: str | None, label: str | None, limit: int) -> None:
    """Items, filtered by status, assignee and label."""
    run = cli_of()
    found = run.client.items.list(status, assignee, label, limit)
    run.out.emit(
        {"items": [x.to_dict() for x in found]},
        lambda: items_table(found) if found else "no items",
    )


@verb(
    items,
    "show",
    summary="Show an item, its lease and its ownership history.",
    example="tenure items show 42\ntenure items show 42 --json",
)
@ITEM
def items_show(item_id: str) -> None:
    """ITEM with its lease, lease state, progress and transfers (every change of owner or
    epoch: claimed, released, taken_over, force_released, completed, cancelled)."""
    run = cli_of()
    view = run.client.items.get(item_id)
    run.out.emit(view.to_dict(), lambda: view_table(view))


@verb(
    items,
    "reopen",
    summary="Reopen a parked item (its attempts reset).",
    example='tenure items reopen 42 --reason "fixed the flaky test it kept failing on"',
)
@ITEM
@click.option("--reason", required=True, help="Why (recorded with the transfer).")
def items_reopen(item_id: str, reason: str) -> None:
    """Set a parked ITEM (its claims failed the policy's max_attempts times) open again,
    nobody's, with its attempts and failures reset. Its assignee, its creator, an ancestor of
    its assignee, a supervisor or an admin may; an item that is not parked exits 3."""
    run = cli_of()
    item = run.client.items.reopen(item_id, reason)
    run.out.emit(iv.REOPEN_ITEM.wire(item), f"{item_id}: {item.status} ({reason})")
