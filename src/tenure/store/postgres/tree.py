"""Subtree leases on PostgreSQL: the prefix locks and the nearby reads of a key's transaction.

Row locks alone would let a plain acquisition of ``a/b/c`` and a subtree acquisition of
``a/b/`` (two rows) both succeed (write skew). So every transaction that may make a lease live
(an acquisition, a renewal, an extend) takes advisory locks on prefixes, in the round trip of
its row lock and before it (``lock_prefixes``): shared on each prefix above the key that ends
in ``/``, exclusive on the key itself when it ends in ``/``. A subtree acquisition of ``P/``
then runs alone against every such transaction on a key under ``P/`` and on a subtree above
it, and what either reads of the other's rows (:meth:`tenure.store.base.KeyTx.nearby`) cannot
become live before it commits. The locks are taken shortest prefix first (then in code point
order), so no two transactions wait on each other's prefix locks in a cycle; an item's key
(``items/…``) takes none (no subtree covers it). Releases need none: a lease that ends
meanwhile can only make a refusal needless, never a grant wrong.

``renew-all`` takes none either (it renews many keys in one statement): it locks its holder's
rows, reads the instant, renews those live then, and commits, seconds later for a million
leases. A lease it renews may expire meanwhile, in the version others read. So the nearby
reads lock what they read, with a share lock (``FOR SHARE``): the subtree leases above the key
(``nearby_subtrees``) and, for a subtree acquisition, every unended lease under it
(``nearby_under``, all of them, then the latest deadline among them). A row a renewal holds is
waited for, then read as it committed it (READ COMMITTED reads the row's new version again);
their filters are on columns no renewal changes (``ended``, ``token``, ``scope``, the key, the
holder and session), so a renewed row is never skipped. (A row no read can see yet, a new
key's placeholder, is nobody's renewal: what makes it live is ordered by the prefix locks.)
A renewal that comes after the read waits for the reader's commit, and reads its instant after
it: a lease the reader saw expired is not renewed. The cost: a subtree acquisition locks every
unended lease under it (about a microsecond each: 10 ms for 10,000), and reads nothing else:
the unended leases are a range of their own index (``tenure_leases_unended``, key order), so the
rows of leases that ended under the prefix (a key's history, kept until compaction) are never
visited. They need no lock: no renewal or extend makes an ended lease live again (they renew live
leases only), and what does, an acquisition, is ordered by the prefix locks.

Deadlocks. Every lease row lock is taken in one order, the key's byte order (the key column is
``COLLATE "C"``), each transaction only ever waiting for a row after every row it holds; a
cycle of waits would need a row before itself. ``renew-all`` locks its rows in key order
(``lock_holder_leases``) and takes no other lock before its commit. A key's transaction locks
the subtree rows above its key (proper prefixes: before it in byte order), then its own row
(``create_lease_row`` and ``lock_lease``), then the rows under it (which start with it: after
it), in one round trip and in that order (:meth:`PostgresStore._lock`); a renewal, an extend
or a release locks its own row alone. Its advisory locks come before any row lock, so it never
holds a row lock while it waits for an advisory one (and ``renew-all`` takes none). The
reaper and compaction skip locked rows (``SKIP LOCKED``). The event lock is taken last, by
statements that wait for no row. (Were the row above locked after the key's own, a plain
acquisition of ``P/a`` holding ``P/a`` and waiting for ``P/`` would deadlock with a renew-all
holding ``P/`` and waiting for ``P/a``.)

In a group (the server's group commit) the keys locked ahead take their prefix locks in the
group's first round trip, all of them, the strongest mode of each prefix, in that order; the
same round trip then locks, in one statement and in key order, the group's keys, the unended
subtree leases on every prefix above them and every unended lease under its keys that end in
``/`` (:func:`lock_ahead`): a group's acquisitions cost no round trip more. A subtree
acquisition in a group reads the keys under it in a round trip of its own (rare), rows it
holds already. Those rows are locked for update (one locking clause per statement): another
transaction under a live subtree waits for the group's commit, not only for its decision. A
call on a key the group did not lock ahead locks it then, out of that order (the server's
executor names every key ahead). What the group itself saved is newer than the table (its
saves are sent at its commit): its records (``Group.locked``) stand in for the table's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from tenure.core.items import ITEM_PREFIX
from tenure.core.models import KeyRecord
from tenure.core.subtree import ancestors, under, upper_bound
from tenure.store import rows
from tenure.store.postgres.literals import literals
from tenure.store.values import Reach

Batch = Any  # tenure.store.postgres.tx.Batch (which imports this module)


def prefix_locks(keys: Iterable[str]) -> dict[str, bool]:
    """The prefix locks of transactions on ``keys``: prefix -> exclusive, in lock order."""
    modes: dict[str, bool] = {}
    for key in keys:
        if key.startswith(ITEM_PREFIX):
            continue
        for prefix in ancestors(key):
            modes.setdefault(prefix, False)
        if key.endswith("/"):
            modes[key] = True
    return {p: modes[p] for p in sorted(modes, key=_lock_order)}


def _lock_order(prefix: str) -> tuple[int, str]:
    return len(prefix), prefix


def queue_locks(batch: Batch, keys: Iterable[str]) -> int:
    """Queue the prefix locks of ``keys`` (statements queued: 0 or 1)."""
    modes = prefix_locks(keys)
    if not modes:
        return 0
    batch.add("lock_prefixes", {"prefixes": list(modes), "exclusive": list(modes.values())})
    return 1


@lru_cache(maxsize=4096)
def _key_locks(key: str) -> str | None:
    """The ``lock_prefixes`` statement of a transaction on ``key`` alone (``None``: it takes
    none), written once per key: a hot key's transactions do not build it again."""
    modes = prefix_locks((key,))
    if not modes:
        return None
    args = literals([list(modes), list(modes.values())])
    return f"EXECUTE tenure_lock_prefixes({args})"


def queue_key_locks(batch: Batch, key: str) -> None:
    """Queue the prefix locks of a transaction on ``key`` alone, if it takes any."""
    sql = _key_locks(key)
    if sql is not None:
        batch.add_sql(sql)


def above_all(keys: Iterable[str]) -> list[str]:
    """The prefixes above ``keys`` whose subtree leases a group reads ahead."""
    found = dict.fromkeys(p for k in keys if not k.startswith(ITEM_PREFIX) for p in ancestors(k))
    return list(found)


def lock_ahead(keys: Sequence[str], above: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The statement that locks a group's ``keys`` ahead and its parameters: ``lock_leases``
    (no prefix above them), ``lock_leases_above`` (the subtree leases on the prefixes
    ``above`` them too) or ``lock_leases_tree`` (and the leases under its keys that end in
    ``/``), all in key order."""
    tops = [k for k in keys if k.endswith("/") and not k.startswith(ITEM_PREFIX)]
    if tops:
        hi = [upper_bound(k) for k in tops]
        return "lock_leases_tree", {"keys": keys, "above": above, "lo": tops, "hi": hi}
    if above:
        return "lock_leases_above", {"keys": keys, "above": above}
    return "lock_leases", {"keys": keys}


def live_subtree(rec: KeyRecord | None) -> bool:
    """``rec`` is a row ``nearby_subtrees`` would find: an unended subtree lease."""
    return rec is not None and rec.scope == "subtree" and rec.ended is None


def queue_above(
    batch: Batch,
    key: str,
    reach: Reach | None,
    locked: Mapping[str, KeyRecord | None],
    subtrees: Mapping[str, KeyRecord | None],
) -> int:
    """Queue the read (and share locks) of the subtree leases above ``key`` for ``reach``,
    before the key's own row is locked (statements queued: 0 or 1); ``locked``, ``subtrees``:
    what a group knows (:func:`from_group`), not asked again."""
    if reach is None:
        return 0
    above = [p for p in ancestors(key) if p not in locked and p not in subtrees]
    if not above:
        return 0
    batch.add("nearby_subtrees", {"prefixes": above})
    return 1


def queue_under(
    batch: Batch,
    key: str,
    reach: Reach | None,
    locked: Mapping[str, KeyRecord | None],
    subtrees: Mapping[str, KeyRecord | None],
) -> int:
    """Queue the read (and share locks) of the leases under ``key`` for a subtree ``reach``,
    after the key's own row is locked (statements queued: 0 or 1)."""
    if reach is None or reach.scope != "subtree":
        return 0
    batch.add("nearby_under", under_params(key, reach, locked, subtrees))
    return 1


def under_params(
    key: str,
    reach: Reach,
    locked: Mapping[str, KeyRecord | None],
    subtrees: Mapping[str, KeyRecord | None],
) -> dict[str, Any]:
    """``nearby_under``'s parameters: the keys whose whole record the group has are skipped
    (those it locked; a subtree lease it read ahead, not a prefix it found none on)."""
    skip = [k for k in locked if under(key, k)]
    skip += [k for k, r in subtrees.items() if r is not None and under(key, k)]
    return {"prefix": key, "upper": upper_bound(key), "skip": skip, **reach._asdict()}


def records(found: Sequence[Sequence[Sequence[Any]]]) -> list[KeyRecord]:
    return [rows.record_from(r) for rows_ in found for r in rows_]


def from_group(
    key: str,
    reach: Reach | None,
    locked: Mapping[str, KeyRecord | None],
    subtrees: Mapping[str, KeyRecord | None],
) -> list[KeyRecord]:
    """The records a group holds among the nearby leases of ``reach`` on ``key``: those of the
    keys it locked (as it saved them last), else the subtree leases it read ahead."""
    if reach is None:
        return []
    mine = []
    for prefix in ancestors(key):
        rec = locked[prefix] if prefix in locked else subtrees.get(prefix)
        if rec is not None:
            mine.append(rec)
    if reach.scope == "subtree":
        mine += [r for k, r in locked.items() if r is not None and under(key, k)]
        mine += [
            r for k, r in subtrees.items() if r is not None and k not in locked and under(key, k)
        ]
    return mine
