"""Subtree leases on PostgreSQL: the prefix locks and the nearby reads of a key's transaction.

Row locks alone would let a plain acquisition of ``a/b/c`` and a subtree acquisition of
``a/b/`` (two rows) both succeed (write skew). So every transaction that may make a lease live
(an acquisition, a renewal, an extend) takes advisory locks on prefixes, in the round trip of
its row lock and before it (``lock_prefixes``): shared on each prefix above the key that ends
in ``/``, exclusive on the key itself when it ends in ``/``. A subtree acquisition of ``P/``
then runs alone against every such transaction on a key under ``P/`` and on a subtree above
it, and what either reads of the other's rows (:meth:`tenure.store.base.KeyTx.nearby`) cannot
become live before it commits. (Releases need none: a lease that ends meanwhile can only make
a refusal needless, never a grant wrong. ``renew-all`` takes none either: it renews many keys
in one statement; a renewal it makes in the last milliseconds of a lease's term, as a subtree
acquisition reads that lease, is the one window left.) The locks are taken
shortest prefix first (then in code point order), so no two transactions wait on each other's
prefix locks in a cycle; an item's key (``items/…``) takes none (no subtree covers it).

In a group (the server's group commit) the keys locked ahead take their prefix locks in the
group's first round trip, all of them, the strongest mode of each prefix, in that order, and
the subtree leases on every prefix above them are read there too: a group's acquisitions cost
no round trip more. A subtree acquisition in a group reads the keys under it in a round trip of
its own (rare). What the group itself saved is newer than the table (its saves are sent at its
commit): its records (``Group.locked``) stand in for the table's rows.
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


def queue_nearby(
    batch: Batch,
    key: str,
    reach: Reach | None,
    locked: Mapping[str, KeyRecord | None],
    subtrees: Mapping[str, KeyRecord | None],
) -> int:
    """Queue the reads of :meth:`KeyTx.nearby` for ``reach`` on ``key`` (statements queued);
    ``locked``, ``subtrees``: what a group knows (:func:`from_group`), not asked again."""
    if reach is None:
        return 0
    queued = 0
    above = [p for p in ancestors(key) if p not in locked and p not in subtrees]
    if above:
        batch.add("nearby_subtrees", {"prefixes": above})
        queued += 1
    if reach.scope == "subtree":
        batch.add("nearby_under", under_params(key, reach, locked, subtrees))
        queued += 1
    return queued


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
