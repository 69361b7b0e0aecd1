"""Where a time window starts in SQLite's event log (for the statistics queries)."""

from __future__ import annotations

import sqlite3

from tenure.store.sqlfiles import queries

Q = queries("sqlite")


def first_event_at(conn: sqlite3.Connection, at: int) -> int:
    """An id that splits the event log at the instant ``at``: the events before it are older,
    those from it on are not. Events are appended under the write lock with the instant read
    after taking it, so instants grow with ids and a binary search on the primary key finds it
    (about 2 log2(n) page reads, no index on ``at``). A clock that stepped back can misplace
    the split by the events written meanwhile; the queries check ``at`` as well."""
    lo, hi = conn.execute(Q["event_id_range"]).fetchone()
    if hi == 0:  # no events
        return 0
    hi += 1  # the split is in [lo, hi]: hi when every event is older
    while lo < hi:
        mid = (lo + hi) // 2  # <= the newest id, so an event at or after it exists
        found, found_at = conn.execute(Q["event_at_or_after"], {"id": mid}).fetchone()
        if found_at >= at:
            hi = mid  # (no event between mid and found)
        else:
            lo = found + 1
    return int(lo)
