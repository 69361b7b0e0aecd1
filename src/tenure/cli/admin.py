"""``tenure admin token-floor``: read or raise the token floor; ``tenure admin compact``: run
one compaction pass. Through the server as an admin, or with ``--db`` directly on the database
(trusted: for bootstrap after a reset or a move, or a database no server runs on)."""

from __future__ import annotations

import click

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.cli.options import DIRECT_DB
from tenure.cli.render import pairs
from tenure.core.compaction import MAX_BATCH, CompactionResult
from tenure.core.token_floor import TokenFloor
from tenure.settings import Settings


@cli.group(
    epilog="\b\nExamples:\n  tenure admin token-floor\n  tenure admin token-floor --set 48213"
    "\n  tenure admin compact"
)
def admin() -> None:
    """Operate tenure itself (admins): the token floor after a reset or a move of its
    database; compaction of what retention no longer keeps."""


@verb(
    admin,
    "token-floor",
    summary="Show the token floor, or raise it with --set N (admins).",
    example="tenure admin token-floor\ntenure admin token-floor --set 48213\n"
    "tenure admin token-floor --set 48213 --db postgresql://tenure@db/tenure",
)
@click.option("--set", "floor", type=click.IntRange(min=0), help="Raise the floor to N.")
@DIRECT_DB
def token_floor(floor: int | None, db: str | None) -> None:
    """Show the token floor and the largest token ever granted in this database; with --set N,
    raise the floor: every token granted from now on, on any key, is larger than N (a key whose
    token is already larger is unaffected). Floors only grow: a lower N is refused (exit 3) and
    changes nothing. A live lease below the floor keeps its token until it ends. Recorded as a
    token_floor_set event. Set it on a new or reset database to the largest token the old one
    granted (or your fences have seen), so that fences keep admitting new holders."""
    found = _on_database(db, floor) if db else _on_server(floor)
    shown = [("floor", found.floor), ("largest token", found.max_token)]
    cli_of().out.emit(found.to_dict(), lambda: pairs(shown))


def _on_server(floor: int | None) -> TokenFloor:
    client = cli_of().client
    return client.token_floor() if floor is None else client.set_token_floor(floor)


def _on_database(db: str, floor: int | None) -> TokenFloor:
    from tenure.service.token_floors import set_floor, show_floor  # here: the CLI starts faster
    from tenure.store.open import open_store

    store = open_store(Settings.from_env(db=db).db)
    try:
        return show_floor(store, None) if floor is None else set_floor(store, None, floor)
    finally:
        store.close()


@verb(
    admin,
    "compact",
    summary="Run one compaction pass: delete what retention no longer keeps (admins).",
    example="tenure admin compact\ntenure admin compact --json\n"
    "tenure admin compact --db postgresql://tenure@db/tenure",
)
@click.option(
    "--batch",
    type=click.IntRange(1, MAX_BATCH),
    default=1000,
    show_default=True,
    help="Rows one transaction deletes at most.",
)
@DIRECT_DB
def compact(batch: int, db: str | None) -> None:
    """Run one compaction pass: delete the lease rows of keys idle past the policy's
    lease_retention (a key acquired again still gets a larger token than any it had), the
    op_ids of writes past the op_window (a retry past it is a new write), events past the
    retention (their counts stay in the all-time totals) and dispatched agents retired after
    their grace period. Each batch is its own short transaction; a pass stops at a budget of
    batches and says whether more is due (run it again). The server runs it on its own every
    TENURE_COMPACT_EVERY_S seconds."""
    done = _compact_on_database(db, batch) if db else cli_of().client.compact(batch)
    shown = [(name.replace("_", " "), value) for name, value in done.to_dict().items()]
    cli_of().out.emit(done.to_dict(), lambda: pairs(shown))


def _compact_on_database(db: str, batch: int) -> CompactionResult:
    from tenure.service.leases import Service
    from tenure.store.open import open_store

    settings = Settings.from_env(db=db)
    store = open_store(settings.db)
    try:
        service = Service(store, settings.policy, retention=settings.compaction)
        return service.compact(batch)
    finally:
        store.close()
