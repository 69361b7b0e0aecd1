"""Operations: ``events [--follow]`` and ``heartbeat`` (for agent-harness hooks)."""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

import click

from tenure.cli import eventlog
from tenure.cli.app import cli
from tenure.cli.completion import complete_keys
from tenure.cli.context import Cli, cli_of, verb
from tenure.cli.durations import parse_duration
from tenure.cli.render import LOST, OK, now_ms, table
from tenure.core.models import Event
from tenure.core.text import clock, when
from tenure.supervise.interrupt import raising
from tenure.verbs.ops import Filters

_STOPS = (signal.SIGINT, signal.SIGTERM)


def event_line(event: Event) -> str:
    """``14:03:10 #17 acquired jobs/nightly holder=jo task=cron token=3``."""
    fields = [
        ("holder", event.holder),
        ("task", event.task),
        ("token", event.token),
        ("actor", event.actor if event.actor != event.holder else None),
        ("reason", event.reason),
    ]
    extra = " ".join(f"{k}={v}" for k, v in fields if v is not None)
    return f"{clock(event.at)} #{event.id} {event.type} {event.key or '-'}" + (
        f" {extra}" if extra else ""
    )


def events_table(events: list[Event]) -> Any:
    return table(
        ["ID", "AT", "TYPE", "KEY", "HOLDER", "TASK", "TOKEN", "ACTOR", "REASON"],
        [
            (e.id, clock(e.at), e.type, e.key, e.holder, e.task, e.token, e.actor, e.reason)
            for e in events
        ],
    )


class _Stop(Exception):
    """SIGINT or SIGTERM while following."""


def _stop(_sig: int, _frame: FrameType | None) -> None:
    raise _Stop


@contextmanager
def stoppable() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into :class:`_Stop` for the block (and restore the handlers)."""
    with raising(_STOPS, _stop):
        yield


@verb(
    cli,
    "events",
    summary="Show the latest events (--follow: keep printing new ones).",
    example="tenure events\n"
    "tenure events --key jobs/nightly --since 10m\n"
    "tenure events --follow --type expired\n"
    "tenure events --from-start --limit 50 --json",
)
@click.option("--since", help="Only events after this id, or of the last DURATION (10m, 2h).")
@click.option("--after", type=click.IntRange(0), help="Only events after this id (the cursor).")
@click.option("--from-start", is_flag=True, help="From the oldest event kept (replay).")
@click.option("--key", help="Only events of this key.", shell_complete=complete_keys)
@click.option("--holder", help="Only events of leases of this principal.")
@click.option("--type", "kind", help="Only events of this type (acquired, expired, …).")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    help="At most this many events (default: the latest 20; 100 with --after, --since ID or "
    "--from-start).",
)
@click.option("--item", help="Only events of this item (its key is items/ID).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until interrupted.")
def events(
    since: str | None,
    after: int | None,
    from_start: bool,
    key: str | None,
    holder: str | None,
    kind: str | None,
    limit: int | None,
    item: str | None,
    follow: bool,
) -> int:
    """The latest events, oldest first (the last 20, or --limit): acquired, renewed, extended,
    released, expired, force_released, conflict, taken_over, claimed, completed, progress,
    dispatched, … --since 10m shows those of the last ten minutes; --after ID (or --since ID)
    those after an event id, and --from-start replays the log from its oldest event kept. With
    --json, one document {"events": [...], "next": CURSOR}; pass CURSOR as --after to go on from
    there. With --follow, one line per event as it happens, from now (or from --after, --since,
    --from-start), JSON lines with --json (the server holds each request until there is news,
    so nothing polls), until Ctrl-C or SIGTERM, which end it with exit 0."""
    run = cli_of()
    f = Filters(key=key, holder=holder, type=kind, item=item)
    start = start_of(after, since, from_start)
    if follow:
        begin = start if isinstance(start, int) else eventlog.head(run.client)
        if isinstance(start, Cutoff):
            shown, begin = eventlog.latest(run.client, 1000, f, start.reached)
            for event in start.keep(shown):
                run.out.line(event.to_dict(), event_line(event))
        return follow_events(run, begin, f)
    if isinstance(start, int):
        found = run.client.events(
            start, key=key, holder=holder, type=kind, limit=limit or 100, item=item
        )
        cursor = found[-1].id if found else start
    elif isinstance(start, Cutoff):
        found, cursor = eventlog.latest(run.client, limit or 1000, f, start.reached)
        found = start.keep(found)
    else:
        found, cursor = eventlog.latest(run.client, limit or LATEST, f)
    doc = {"events": [e.to_dict() for e in found], "next": cursor}
    run.out.emit(doc, lambda: events_table(found) if found else "no events")
    return OK


LATEST = 20


@dataclass(frozen=True)
class Cutoff:
    """``--since DURATION``: the events at or after ``at`` (epoch ms)."""

    at: int

    def reached(self, found: list[Event]) -> bool:
        return found[0].at < self.at

    def keep(self, found: list[Event]) -> list[Event]:
        return [e for e in found if e.at >= self.at]


def start_of(after: int | None, since: str | None, from_start: bool) -> int | Cutoff | None:
    """Where to read from: an event id, a moment, or ``None`` for the latest events."""
    given = [x for x in (after is not None, since is not None, from_start) if x]
    if len(given) > 1:
        raise click.UsageError("--after, --since and --from-start exclude each other")
    if from_start:
        return 0
    if since is None:
        return after
    if since.strip().isdigit():
        return int(since)
    try:
        return Cutoff(now_ms() - parse_duration(since))
    except ValueError as err:
        raise click.BadParameter(f"{err}, or an event id", param_hint="--since") from None


def follow_events(run: Cli, after: int, f: Filters) -> int:
    events = run.client.events(
        after, key=f.key, holder=f.holder, type=f.type, item=f.item, follow=True
    )
    feed = follow_in_background(events)
    with stoppable():
        try:
            while True:
                try:
                    event = feed.get(timeout=0.5)
                except queue.Empty:
                    continue
                if isinstance(event, BaseException):
                    raise event
                run.out.line(event.to_dict(), event_line(event))
        except _Stop:
            return OK


def follow_in_background(events: Iterator[Event]) -> queue.Queue[Event | BaseException]:
    """Read ``events`` in a daemon thread. The main thread only waits on the queue, so Ctrl-C
    and SIGTERM stop the command at once: a signal that lands just before a blocking read of a
    long-poll would otherwise wait for the reply (up to 25 s) before its handler ran."""
    feed: queue.Queue[Event | BaseException] = queue.Queue()

    def pump() -> None:
        try:
            for event in events:
                feed.put(event)
        except BaseException as exc:  # handed to the main thread
            feed.put(exc)

    threading.Thread(target=pump, name="tenure-follow", daemon=True).start()
    return feed


@verb(
    cli,
    "heartbeat",
    summary="Renew all your session's live leases in one call (for agent-harness hooks).",
    example="tenure heartbeat\ntenure heartbeat items/42 jobs/nightly --json",
)
@click.argument("keys", nargs=-1, metavar="[KEY]...", shell_complete=complete_keys)
def heartbeat(keys: tuple[str, ...]) -> int:
    """Renew every live lease and claim of your session (or only the KEYs given; an item's
    key is items/ID) for its own ttl: the CLI's session, or $TENURE_SESSION, which `tenure run`
    and `tenure dispatch` set for their command. Leases of your other sessions (another run, a
    script) are theirs to renew. Exit 4 if any of them was lost, naming it and why."""
    run = cli_of()
    result = run.client.renew_all(list(keys) if keys else None)

    def human() -> str:
        lines = [
            f"renewed {x.key} (token {x.token}) until {when(x.expires_at)}" for x in result.renewed
        ]
        lines += [
            f"lost {x.key}" + (f" (token {x.token})" if x.token else "") + f": {x.reason}"
            for x in result.lost
        ]
        return "\n".join(lines) or "no live leases to renew"

    run.out.emit(result.to_dict(), human)
    return LOST if result.lost else OK
