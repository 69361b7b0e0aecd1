"""What the CLI prints: one JSON document with ``--json``, else readable tables; errors in
words on stderr; stable exit codes."""

from __future__ import annotations

import io
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from tenure import errors as e
from tenure.core.text import TAKEOVER
from tenure.core.text import describe as describe  # cli/run.py imports it from here

_WIDEST = 10_000  # columns a table may take to show every cell whole
#: spaces at the end of a line (before any closing style codes)
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)

# Exit codes: stable, documented in docs/cli.md.
OK, ERROR, USAGE, CONFLICT, LOST, NOT_FOUND = 0, 1, 2, 3, 4, 5
_EXITS: tuple[tuple[type[e.TenureError], int], ...] = (
    (e.LeaseHeld, CONFLICT),
    (e.AssignedToOther, CONFLICT),
    (e.IdempotencyConflict, CONFLICT),
    (e.NotHolder, CONFLICT),
    (e.Parked, CONFLICT),
    (e.LeaseLost, LOST),
    (e.StaleToken, LOST),
    (e.NotFound, NOT_FOUND),
)


def exit_code(err: e.TenureError) -> int:
    """3 held/assigned/parked/conflict, 4 lost/stale, 5 not found, 2 invalid input, 1 the rest."""
    if err.code == "conflict":
        return CONFLICT
    for cls, code in _EXITS:
        if isinstance(err, cls):
            return code
    return USAGE if isinstance(err, e.InvalidRequest) else ERROR


def now_ms() -> int:
    return int(time.time() * 1000)


class Output:
    """stdout for results (JSON or tables), stderr for everything else."""

    def __init__(self, as_json: bool = False) -> None:
        self.json = as_json
        # No markup or emoji codes: titles, keys and reasons are printed as they are.
        # Long lines are not cut or wrapped by us: the terminal wraps them (a path or a message
        # stays whole for copying), tables are as wide as their content needs.
        self.console = Console(soft_wrap=True, highlight=False, markup=False, emoji=False)
        self.err = Console(stderr=True, soft_wrap=True, highlight=False, markup=False, emoji=False)
        #: how the running command takes an item over, for a refusal that needs a takeover
        self.takeover = TAKEOVER

    def emit(self, doc: Any, human: Callable[[], Any] | str | None = None) -> None:
        """Print ``doc`` as JSON, or ``human`` (a string, a rich renderable, or a function
        returning one) for people."""
        if self.json:
            sys.stdout.write(json.dumps(doc, default=str) + "\n")
            sys.stdout.flush()
            return
        shown = human() if callable(human) else human
        if shown is None:
            shown = json.dumps(doc, indent=2, default=str)
        if isinstance(shown, str):
            self.console.print(shown)
        else:
            sys.stdout.write(self.render(shown))
            sys.stdout.flush()

    def render(self, shown: Any) -> str:
        """A table (or a group of them) as text: never narrower than its content (no cell is
        cut short), without trailing spaces."""
        ours = self.console
        unbounded = ours.options.update_width(_WIDEST)
        width = max(ours.width, Measurement.get(ours, unbounded, shown).maximum)
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=width,
            force_terminal=ours.is_terminal,
            color_system=ours.color_system,  # type: ignore[arg-type]
            no_color=ours.no_color,
            highlight=False,
            markup=False,
            emoji=False,
        )
        console.print(shown)
        return _TRAILING.sub(r"\1", buffer.getvalue())

    def line(self, doc: Any, human: str) -> None:
        """One record of a stream: a JSON line, or a line of text."""
        self.emit(doc, lambda: human)

    def note(self, text: str) -> None:
        """A message for the person at the terminal, never on stdout."""
        if not self.json:
            self.err.print(text)

    def error(self, err: e.TenureError, then: str | None = None) -> None:
        """``err`` on stderr, in words (``then`` appended: what else matters), or as JSON."""
        if self.json:
            sys.stderr.write(json.dumps(err.to_problem(), default=str) + "\n")
        else:
            said = describe(err, sessions=True, takeover=self.takeover)
            said += f"; {then}" if then else ""
            self.err.print(f"tenure: {said}", markup=False)


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> Table:
    """A plain table; ``-`` for empty cells."""
    out = Table(
        *columns, title=title, title_justify="left", box=None, header_style="bold", pad_edge=False
    )
    for row in rows:
        out.add_row(*("-" if v is None or v == "" else str(v) for v in row))
    return out


def pairs(items: Iterable[tuple[str, Any]]) -> Text:
    """``name  value`` lines for one record: the names aligned, each value whole on its line
    (a path is never cut to fit a column)."""
    rows = [(name, "-" if value is None or value == "" else str(value)) for name, value in items]
    width = max((len(name) for name, _ in rows), default=0)
    out = Text()
    for index, (name, value) in enumerate(rows):
        out.append("\n" if index else "")
        out.append(name, style="bold")
        out.append(" " * (width - len(name) + 2) + value.replace("\n", "\n" + " " * (width + 2)))
    return out
