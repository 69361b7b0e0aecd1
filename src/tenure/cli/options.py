"""Options several commands share, declared once: the takeover pair of `claim` and
`dispatch`, the `--grace` of the commands that supervise a child, and `--db` of the
commands that can work directly on the database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from tenure.cli.durations import DURATION

F = TypeVar("F", bound=Callable[..., Any])

DB_HELP = "Work on this database directly, not through a server (trusted, like principal add)."

#: ``--db``: work on this database directly
DIRECT_DB = click.option("--db", help=DB_HELP)

#: ``--reason`` as the takeover pair has it (required with ``--takeover``)
TAKEOVER_REASON = click.option(
    "--reason", help="Why (recorded with the transfer; required with --takeover)."
)


def takeover(help: str) -> Callable[[F], F]:
    """``--takeover`` and its ``--reason``; ``help`` says what may be taken over."""
    flag = click.option("--takeover", is_flag=True, help=help)
    return lambda f: flag(TAKEOVER_REASON(f))


def grace(help: str) -> Callable[[F], F]:
    """``--grace``: how long a supervised child has between SIGTERM and SIGKILL."""
    return click.option("--grace", type=DURATION, default="10s", show_default=True, help=help)
