"""What a PostgreSQL primary says about its standbys, for ``tenure serve``'s start-up line.

A failover to a standby loses no acknowledged call only when every commit waited for that
standby: ``synchronous_standby_names`` names it, ``synchronous_commit`` is ``on`` (or
``remote_write``/``remote_apply``) and the standby is streaming as ``sync`` or ``quorum``. With
an asynchronous standby the promoted database may miss the last commits (tenure's tokens still
never go back: a server raises its token floor when its database changed under it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

WAITS = frozenset({"on", "remote_write", "remote_apply"})

QUERY = """
SELECT current_setting('synchronous_standby_names'),
       current_setting('synchronous_commit'),
       (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')),
       (SELECT count(*) FROM pg_stat_replication)
"""


@dataclass(frozen=True)
class Replication:
    """``names``: ``synchronous_standby_names``; ``commit``: ``synchronous_commit``;
    ``sync``, ``streaming``: standbys streaming synchronously, and at all."""

    names: str
    commit: str
    sync: int
    streaming: int

    @property
    def synchronous(self) -> bool:
        """Whether every commit waits for a standby that is streaming now."""
        return bool(self.names.strip()) and self.commit in WAITS and self.sync > 0

    def describe(self) -> str:
        if self.synchronous:
            return (
                f"{self.sync} synchronous standby streaming (synchronous_standby_names="
                f"'{self.names}', synchronous_commit={self.commit}): a failover to it loses "
                "no acknowledged call"
            )
        if self.streaming:
            why = "" if self.names.strip() else " (synchronous_standby_names is empty)"
            return (
                f"{self.streaming} asynchronous standby streaming{why}: a failover may lose the "
                "last commits; tokens stay safe, acknowledged calls may be lost"
            )
        return "no standby streaming from this database"


def read(conn: psycopg.Connection[Any]) -> Replication:
    row = conn.execute(QUERY).fetchone()
    assert row is not None
    return Replication(str(row[0]), str(row[1]), int(row[2]), int(row[3]))


def check(url: str) -> Replication:
    """The replication of the database at ``url`` (a connection of its own)."""
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        return read(conn)
