"""SQL lives in ``.sql`` files per backend: numbered migrations and named queries."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
#: a ``:name`` parameter (not a ``::type`` cast)
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
#: a query that reads the rows of another, with other columns: ``-- FROM … as in list_items``
_AS_IN = re.compile(r"^-- FROM … as in (\w+)\s*$", re.MULTILINE)
#: the event filters with an index of their own: ``list_<column>_events`` reads along it
LEADS = ("key", "holder", "type")


@cache
def queries(backend: str) -> dict[str, str]:
    """The named blocks (``-- name: foo``) of ``sql/queries.sql`` (both backends', with
    ``:name`` parameters: PostgreSQL's ``%(name)s`` are made from them) and of
    ``sql/<backend>/queries.sql``."""
    folder = resources.files("tenure.store").joinpath("sql")
    found = _named(folder.joinpath("queries.sql").read_text())  # both backends'
    if backend == "postgres":
        found = {name: _PARAM.sub(r"%(\1)s", _code(sql)) for name, sql in found.items()}
    found.update(_named(folder.joinpath(backend, "queries.sql").read_text()))
    for name, sql in found.items():
        if (same := _AS_IN.search(sql)) is not None:
            found[name] = sql[: same.start()] + _from_on(found[same[1]])
    for column in LEADS:
        found[f"list_{column}_events"] = _led_by(found["list_events"], column)
    return found


def _code(sql: str) -> str:
    """``sql`` without its comment lines (psycopg would read a ``%`` in them)."""
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


def _named(text: str) -> dict[str, str]:
    parts = _NAME.split(text)
    return {n: b.strip().rstrip(";") for n, b in zip(parts[1::2], parts[2::2], strict=True)}


def _from_on(sql: str) -> str:
    """``sql`` from its ``FROM`` line on (its tables, filters, order and limit)."""
    lines = sql.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
    return "\n".join(lines[start:])


def _led_by(sql: str, column: str) -> str:
    """``sql`` (``list_events``) with its optional filter on ``column`` made the lead of its
    ``WHERE``: ``AND (:key IS NULL OR key = :key)`` becomes ``WHERE key = :key AND …``."""
    lines = sql.splitlines()
    (optional,) = [line for line in lines if f" OR {column} = " in line]
    equal = optional.split(" OR ", 1)[1].removesuffix(")")
    kept = "\n".join(line for line in lines if line is not optional)
    return kept.replace("WHERE ", f"WHERE {equal} AND ", 1)


@cache
def migrations(backend: str) -> tuple[tuple[int, str, str], ...]:
    """``(version, name, sql)`` of ``sql/<backend>/migrations/NNNN_name.sql``, in order."""
    folder = resources.files("tenure.store").joinpath("sql", backend, "migrations")
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_(\w+)\.sql", entry.name)
        if match:
            found.append((int(match[1]), match[2], entry.read_text()))
    found.sort()
    if [v for v, _, _ in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"{backend} migrations are not numbered 0001, 0002, …")
    return tuple(found)
