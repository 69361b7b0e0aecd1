"""A SQLite database's schema brought up to date: the numbered migrations of
``sql/sqlite/migrations`` it has not run yet, in one write transaction."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tenure.core.clock import Clock
from tenure.store.sqlfiles import migrations


def migrate(conn: sqlite3.Connection, path: Path, clock: Clock) -> None:
    """In the open write transaction of ``conn``."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS tenure_schema "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at INTEGER NOT NULL)"
    )
    current = conn.execute("SELECT coalesce(max(version), 0) FROM tenure_schema")
    have = int(current.fetchone()[0])
    known = migrations("sqlite")
    if have > len(known):
        raise RuntimeError(f"{path} has schema {have}, newer than this tenure")
    for version, name, sql in known[have:]:
        for statement in _statements(sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO tenure_schema VALUES (?, ?, ?)",
            (version, name, clock.now_ms()),
        )


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (comments dropped first: they may hold ``;``). A
    piece ends a statement only where SQLite agrees it is complete (a trigger's body holds
    ``;`` of its own)."""
    code = re.sub(r"--[^\n]*", "", sql)
    out, pending = [], ""
    for piece in code.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending.strip())
    return out
