"""renew_all without keys on PostgreSQL, with the reply's JSON written by the database.

The reply (about 280 bytes a lease) comes in parts of :data:`PART` leases, streamed, and reaches
the service as those parts, which it joins once with the brackets around them. One part in
libpq at a time: it keeps a buffer as large as its largest message, and a whole result beside
the Python copy. A million leases, side by side (bench/results/2026-11-runs.md): the server's
peak 1,322 → 678 MB. Each part is text read in binary form: its UTF-8 bytes as they are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.string import ByteaBinaryLoader

from tenure.store.sqlfiles import queries

Q = queries("postgres")
PART = 10_000  # leases a part of the reply (about 2.8 MB)


def renew_all_json(
    cur: psycopg.Cursor[Any], holder: str, session: str | None, now: Callable[[], int]
) -> tuple[int, list[bytes], int]:
    """Lock ``holder``'s unended leases (of ``session`` unless ``None``) in key order, read the
    instant (``now()``), renew them: the instant, the inside of the reply's array in parts (end
    to end), their number."""
    params: dict[str, Any] = {"holder": holder, "session": session, "keys": None}
    locked = [row[0] for row in cur.execute(Q["lock_holder_leases"], params)]
    instant = now()  # once the rows are locked, so it orders with the commit
    if not locked:
        return instant, [], 0
    params.update(now=instant, locked=locked, part=PART)
    cur.adapters.register_loader("text", ByteaBinaryLoader)  # the JSON's UTF-8 as it is
    parts = list(cur.stream(Q["renew_all_json"], params, binary=True))  # one in libpq at once
    return instant, [part[1] for part in parts], sum(part[0] for part in parts)
