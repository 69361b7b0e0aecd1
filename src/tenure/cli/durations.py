"""Human durations: ``90s``, ``2h``, ``1d``, ``1h30m``, ``250ms``; a bare number is seconds."""

from __future__ import annotations

import re
from typing import Any

import click

from tenure.core.text import format_duration as format_duration  # cli/run.py imports it here

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def parse_duration(text: str) -> int:
    """Milliseconds in ``text``; ``ValueError`` naming the text if it is not a duration."""
    raw = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        return round(float(raw) * 1000)
    parts = _PART.findall(raw)
    if not parts or "".join(n + u for n, u in parts) != raw:
        raise ValueError(f"not a duration: {text!r} (try 90s, 5m, 2h, 1d or 1h30m)")
    return round(sum(float(n) * _UNITS[u] for n, u in parts))


def format_like(ms: int, typed: str | None) -> str:
    """``ms`` in the unit style of ``typed``, a duration the user typed: in its largest unit
    when that is exact (``600s`` for ``3600s``, ``600`` seconds for a bare ``3600``), else as
    :func:`format_duration` (``10m`` for ``1h``)."""
    raw = (typed or "").strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        return f"{ms / 1000:g}s" if ms % 1000 else f"{ms // 1000}s"
    units = [u for _, u in _PART.findall(raw)]
    if units:
        unit = max(units, key=lambda u: _UNITS[u])
        if ms % _UNITS[unit] == 0:
            return f"{ms // _UNITS[unit]}{unit}"
    return format_duration(ms)


#: the durations typed on this command line, by parameter name (``ttl`` → ``1h``), so that a
#: refusal can be worded in the user's units
TYPED: dict[str, str] = {}
#: the command those durations were typed for (``tenure lock acquire``): a refusal names the
#: command that holds longer in its words
COMMAND: list[str] = []


class Duration(click.ParamType[int, Any]):
    """A click parameter holding a duration, converted to milliseconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        if param is not None and param.name:
            TYPED[param.name] = str(value)
            COMMAND[:] = ctx.command_path.split() if ctx is not None else []
        try:
            ms = parse_duration(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)
        if ms <= 0:
            self.fail(f"{value!r} is not a positive duration", param, ctx)
        return ms


DURATION = Duration()


def one_poll(left_ms: int, cap_ms: int) -> int:
    """The wait of the next long poll of a ``--wait`` with ``left_ms`` to go: the server waits
    at most ``cap_ms`` per request, so a longer wait is several polls in a row."""
    return max(1, min(left_ms, cap_ms))
