"""renew_all without keys on PostgreSQL, with the reply's JSON written by the database.

The locked rows are renewed in parts of :data:`PART` leases, one statement each in the one
transaction, each returning its part of the reply (about 245 bytes a lease), which reaches the
service as those parts, joined once with the brackets around them. One part in libpq at a time:
it keeps a buffer as large as its largest message, and a whole result beside the Python copy.
A million leases, side by side (bench/results/2026-11-runs.md): the server's peak 1,322 →
678 MB. Each part is text read in binary form: its UTF-8 bytes as they are.

A statement per part, not one for all, and each lease's JSON put together as text, not by
``json_build_object`` (bench/results/renew-all-20261126.md): the whole session's rows were
sorted twice on disk (420 MB of temporary files at a million leases), each part's now sort in
memory; the JSON takes half the time and is 271 → 235 MB. A million leases, side by side,
alternating: every pair faster, PostgreSQL's CPU 9.1-9.6 → 4.7-7.3 s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.string import ByteaBinaryLoader

from tenure.store.sqlfiles import queries

Q = queries("postgres")
PART = 10_000  # leases a part of the reply (about 2.5 MB)


def renew_all_json(
    cur: psycopg.Cursor[Any], holder: str, session: str | None, now: Callable[[], int]
) -> tuple[int, list[bytes], int]:
    """Lock ``holder``'s unended leases (of ``session`` unless ``None``) in key order, read the
    instant (``now()``), renew them: the instant, the inside of the reply's array in parts (end
    to end), their number."""
    params: dict[str, Any] = {"holder": holder, "session": session, "keys": None}
    locked = [row[0] for row in cur.execute(Q["lock_holder_leases"], params)]
    instant = now()  # once the rows are locked, so it orders with the commit
    cur.adapters.register_loader("text", ByteaBinaryLoader)  # the JSON's UTF-8 as it is
    parts: list[bytes] = []
    total = 0
    for at in range(0, len(locked), PART):
        params.update(now=instant, locked=locked[at : at + PART])
        count, part = cur.execute(Q["renew_all_json"], params, binary=True).fetchone() or (0, b"")
        if count:
            parts += [b",", part] if parts else [part]
            total += count
    return instant, parts, total
