"""Operations: ``events [--follow]`` and ``heartbeat`` (for agent-harness hooks)."""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import click

from tenure.cli.app import cli
from tenure.cli.completion import complete_keys
from tenure.cli.context import cli_of, verb
from tenure.cli.render import LOST, OK, clock, table, when
from tenure.core.models import Event

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
    previous = {sig: signal.signal(sig, _stop) for sig in _STOPS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@verb(
    cli,
    "events",
    summary="Show the event log (--follow: keep printing new events).",
    example="tenure events --key jobs/nightly\n"
    "tenure events --follow --type expired\n"
    "tenure events --item 42 --json\n"
    "tenure events --after 1200 --limit 50 --json",
)
@click.option("--after", type=click.IntRange(0), default=0, help="Only events after this id.")
@click.option("--key", help="Only events of this key.", shell_complete=complete_keys)
@click.option("--holder", help="Only events of leases of this principal.")
@click.option("--type", "kind", help="Only events of this type (acquired, expired, …).")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=100,
    show_default=True,
    help="At most this many events (per request with --follow).",
)
@click.option("--item", help="Only events of this item (its key is items/ID).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until interrupted.")
def events(
    after: int,
    key: str | None,
    holder: str | None,
    kind: str | None,
    limit: int,
    item: str | None,
    follow: bool,
) -> int:
    """Events after the id --after, oldest first: acquired, renewed, extended, released,
    expired, force_released, conflict, taken_over, claimed, completed, progress, dispatched, …
    With --json, one document {"events": [...], "next": CURSOR}; pass CURSOR as --after to go
    on from there. With --follow, one line per event as it happens (JSON lines with --json;
    the server holds each request until there is news, so nothing polls) until Ctrl-C or
    SIGTERM, which end it with exit 0."""
    run = cli_of()
    if not follow:
        found = run.client.events(after, key, holder, kind, limit, item)
        cursor = found[-1].id if found else after
        doc = {"events": [e.to_dict() for e in found], "next": cursor}
        run.out.emit(doc, lambda: events_table(found))
        return OK
    feed = follow_in_background(run.client.events(after, key, holder, kind, item=item, follow=True))
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
