"""SQL lives in ``.sql`` files per backend: numbered migrations and named queries."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@cache
def queries(backend: str) -> dict[str, str]:
    """The named blocks (``-- name: foo``) of ``sql/<backend>/queries.sql``."""
    text = resources.files("tenure.store").joinpath("sql", backend, "queries.sql").read_text()
    parts = _NAME.split(text)
    return {
        name: body.strip().rstrip(";") for name, body in zip(parts[1::2], parts[2::2], strict=True)
    }


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
