"""``tenure hook claude-code``: the harness's command hook. The ``tenure`` script runs it before
the CLI loads (:mod:`tenure.entry`); this command lists it in ``tenure --help`` and serves
``python -m tenure.cli hook …`` by handing over to :mod:`tenure.hooks.command`."""

from __future__ import annotations

import click

from tenure.cli.app import cli
from tenure.cli.context import verb
from tenure.hooks.command import HARNESSES
from tenure.hooks.command import main as run_hook


@verb(
    cli,
    "hook",
    summary="Answer a coding harness's hook event (stdin) with a lease decision.",
    example="tenure hook claude-code < event.json",
)
@click.argument("harness", type=click.Choice(HARNESSES))
def hook(harness: str) -> None:
    """Read one hook event of HARNESS on stdin and answer it as the harness expects: before a
    file edit take or renew the file's lease for the harness's session (blocked, exit 2 with
    the reason on stderr, when another session holds it); after a tool renew the session's
    leases; at the session's end release them. Set up by `tenure agent setup claude-code`.
    Its stdout is the harness's decision JSON, with or without --json."""
    raise SystemExit(run_hook([harness]))
