"""What a PostgreSQL group thread remembers between its groups, so that the next group can
skip its first round trip (:meth:`tenure.store.postgres.PostgresStore.group`).

A group ordinarily takes two round trips: the first locks its keys and reads their rows, the
instant and the auth version; the second sends the writes and the ``COMMIT``. But the rows a
group committed are known to the thread that committed them, together with their version
(the ``xmin`` of the row it wrote), and the database's clock can be bounded from the last round
trip. A group whose keys are all remembered decides on those rows and on that bound, and sends
everything in one round trip whose first statements lock the keys and *check* what it relied on
(``check_group`` in queries.sql), aborting the transaction unless all of it holds:

- every row is the version remembered (nothing else wrote it since: another server, the reaper,
  a ``renew-all``);
- the auth version is the one remembered (no principal or token changed);
- the database's clock, read once the rows are locked (``t``), is at most the instant the calls
  used (``now``, an upper bound of the clock: deadlines count from at least the true instant,
  so no lease is shorter than asked) and at most :data:`SLACK_MS` behind it;
- no deadline of those rows lies in ``(t, now]``: every lease the calls saw live (or ended)
  at ``now`` is live (or ended) at ``t`` too, so each decision is the one the two-round-trip
  group would have made with the instant read under the locks.

If the check fails, the group's transaction is lost (nothing of it happened): the group runs
again the ordinary way, and its keys are forgotten. This module holds the memory and the
bound; it does no I/O.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tenure.core.models import KeyRecord

SLACK_MS = 20  # how far the instant a fast group uses may be ahead of the database's clock
MAX_AGE_S = 1.0  # a clock sample older than this bounds nothing (the clocks' rates may differ)
MAX_ROWS = 10_000  # rows remembered, at most (then: forget them all and start over)
PAUSE = 8  # groups that go the ordinary way after a check failed


@dataclass(frozen=True)
class FastPlan:
    """What a fast group relies on: the rows (and their versions), the auth version and the
    instant its calls use."""

    records: dict[str, KeyRecord]
    xmins: list[str]
    now: int
    auth_version: int

    def check_params(self) -> dict[str, object]:
        """The parameters of ``check_group``."""
        keys = list(self.records)
        return {
            "keys": keys,
            "xmins": self.xmins,
            "deadlines": [self.records[k].expires_at for k in keys],
            "now": self.now,
            "auth": self.auth_version,
            "slack": SLACK_MS,
        }


class GroupMemory:
    """One group thread's memory: the rows its groups committed, the auth version they saw,
    and a sample of the database's clock (the instant read and when, on this host's monotonic
    clock, the round trip that read it was sent)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self.rows: dict[str, tuple[KeyRecord, str]] = {}  # key -> (record, xmin)
        self.auth_version: int | None = None
        self._sample: tuple[int, float] | None = None  # (database ms, sent at)
        self._pause = 0
        self.fast = self.slow = self.stale = 0  # groups of each kind so far

    def clock(self, db_ms: int, sent: float) -> None:
        """The database read ``db_ms`` in a round trip sent at ``sent`` (monotonic seconds).
        Each sample bounds the clock from above; the tighter of this one and the last is kept
        (a round trip slowed down on its way out bounds it loosely), the last only while it is
        younger than half of :data:`MAX_AGE_S`."""
        kept = self._sample
        young = kept is not None and sent - kept[1] < MAX_AGE_S / 2
        if young and kept is not None and kept[0] + (sent - kept[1]) * 1000 < db_ms:
            return  # the sample kept bounds the clock more tightly
        self._sample = (db_ms, sent)

    def upper_now(self) -> int | None:
        """An instant no earlier than the database's clock right now, or None: the clock read
        after the round trip was sent, so it has moved at most as far as this host's since."""
        if self._sample is None:
            return None
        db_ms, sent = self._sample
        elapsed = self._monotonic() - sent
        if elapsed > MAX_AGE_S:
            return None
        return db_ms + 1 + math.ceil(elapsed * 1000)  # +1: the database's ms are truncated

    def plan(self, keys: Sequence[str]) -> FastPlan | None:
        """A fast group for ``keys`` (each once, in key order), if every row is remembered."""
        if self._pause:
            self._pause -= 1
            return None
        if not keys or self.auth_version is None:
            return None
        remembered = [self.rows.get(k) for k in keys]
        if any(r is None for r in remembered):
            return None
        now = self.upper_now()
        if now is None:
            return None
        got = [r for r in remembered if r is not None]
        records = {rec.key: rec for rec, _ in got}
        return FastPlan(records, [x for _, x in got], now, self.auth_version)

    def committed(self, saved: Iterable[KeyRecord], xmin: str, auth_version: int | None) -> None:
        """A group committed: ``saved`` are the rows it wrote, each now at version ``xmin``."""
        if auth_version is not None:
            self.auth_version = auth_version
        saved = list(saved)
        if len(self.rows) + len(saved) > MAX_ROWS:
            self.rows.clear()
        for rec in saved:
            self.rows[rec.key] = (rec, xmin)

    def forget(self, keys: Iterable[str], *, stale: bool = False) -> None:
        """The group of ``keys`` was lost (``stale``: its check failed): forget them; after a
        failed check, the next :data:`PAUSE` groups go the ordinary way."""
        for key in keys:
            self.rows.pop(key, None)
        if stale:
            self.stale += 1
            self._pause = PAUSE
