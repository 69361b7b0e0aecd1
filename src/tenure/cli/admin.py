"""``tenure admin token-floor``: read or raise the token floor, through the server as an admin
or with ``--db`` directly on the database (trusted: for bootstrap after a reset or a move)."""

from __future__ import annotations

import click

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.cli.options import DIRECT_DB
from tenure.cli.render import pairs
from tenure.core.token_floor import TokenFloor
from tenure.service.token_floors import set_floor, show_floor
from tenure.settings import Settings


@cli.group(
    epilog="\b\nExamples:\n  tenure admin token-floor\n  tenure admin token-floor --set 48213"
)
def admin() -> None:
    """Operate tenure itself (admins): the token floor after a reset or a move of its
    database."""


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
    from tenure.store.open import open_store

    store = open_store(Settings.from_env(db=db).db)
    try:
        return show_floor(store, None) if floor is None else set_floor(store, None, floor)
    finally:
        store.close()
