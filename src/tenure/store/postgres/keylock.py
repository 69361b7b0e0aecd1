"""PostgreSQL's key locking, in one place: :func:`lock_key` locks a key and its subtree
neighbours in one round trip (alone or in a group), :func:`lock_ahead` a group's keys.

What it sends, in order, in that round trip: ``BEGIN`` and its generic-plan setting (alone:
:data:`tenure.store.postgres.tx.BEGIN`), the prefix locks (for a transaction that may make a
lease live), the subtree leases above the key (share-locked), a new key's placeholder row, the
key's row lock, the token floor, the leases under a subtree (share-locked) and the instant.
PostgreSQL runs them in order, so the instant is read once the row lock is granted (a waiter
reads it after the holder committed): it orders with the commit, as if the client had waited
for the lock before asking.

Why subtree leases need more than the key's row lock:

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
it), in one round trip and in that order (:func:`_lock`); a renewal, an extend
or a release locks its own row alone. Its advisory locks come before any row lock, so it never
holds a row lock while it waits for an advisory one (and ``renew-all`` takes none). The
reaper and compaction skip locked rows (``SKIP LOCKED``). The events' announcement (a shared
lock, which waits for no one) is taken last, by statements that wait for no row. (Were the row
above locked after the key's own, a plain acquisition of ``P/a`` holding ``P/a`` and waiting
for ``P/`` would deadlock with a renew-all holding ``P/`` and waiting for ``P/a``.)

In a group (the server's group commit) the keys locked ahead take their prefix locks in the
group's first round trip, all of them, the strongest mode of each prefix, in that order; the
same round trip then locks, in one statement and in key order, the group's keys, the unended
subtree leases on every prefix above them and every unended lease under its keys that end in
``/`` (:func:`lock_statement`): a group's acquisitions cost no round trip more. A subtree
acquisition in a group reads the keys under it in a round trip of its own (rare), rows it
holds already. Those rows are locked for update (one locking clause per statement): another
transaction under a live subtree waits for the group's commit, not only for its decision. A
call on a key the group did not lock ahead locks it then, out of that order (the server's
executor names every key ahead). What the group itself saved is newer than the table (its
saves are sent at its commit): its records (``Group.locked``) stand in for the table's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from tenure.core.clock import Clock
from tenure.core.items import ITEM_PREFIX
from tenure.core.models import KeyRecord
from tenure.core.subtree import ancestors, under, upper_bound
from tenure.store import rows
from tenure.store.postgres.literals import literals
from tenure.store.postgres.tx import SAVEPOINT, Batch, Group, record
from tenure.store.values import Reach


@dataclass(slots=True)
class Locked:
    """What :func:`lock_key` found, the key's row locked: its record (``None``: no lease yet),
    the instant read after the lock, the token floor and the retired-token mark (``None``:
    not read), the nearby leases of the acquisition, and whether a savepoint was taken (in a
    group, for a new key's placeholder row)."""

    record: KeyRecord | None
    now: int
    floor: tuple[int, int] | None
    nearby: list[KeyRecord] = field(default_factory=list)
    savepoint: bool = False


def lock_key(
    batch: Batch,
    key: str,
    *,
    reach: Reach | None,
    create: bool,
    guard: bool,
    clock: Clock | None,
    group: Group | None = None,
) -> Locked:
    """Lock ``key`` and its subtree neighbours in one round trip (with what is queued before
    it), and read the instant after: the one entry of a key's locking. ``guard``: the
    transaction may make a lease live (its prefix locks are taken); ``create``: make the key's
    row if missing; ``clock``: instants from it instead of the database; ``group``: the group
    the transaction is a call of (what it locked ahead is not locked, nor read, again)."""
    if group is not None:
        return _in_group(group, key, reach=reach, create=create, guard=guard, clock=clock)
    if guard:
        queue_key_locks(batch, key)
    row, now, floor, nearby = _lock(batch, key, reach, clock, create=create)
    if create and row is None:
        # Its row was there when the placeholder was tried, and a compaction deleted it
        # before the lock was granted: make the placeholder now, so the key is locked (a
        # concurrent acquisition waits for this one).
        row, now, floor, nearby = _lock(batch, key, reach, clock, create=True)
    return Locked(record(row), now, floor, nearby)


def _in_group(
    group: Group, key: str, *, reach: Reach | None, create: bool, guard: bool, clock: Clock | None
) -> Locked:
    """In ``group``: the lock goes with the writes queued before it; a key locked ahead costs
    no round trip (a subtree acquisition on it reads the keys under it); a new key's
    placeholder row costs a second round trip (and a savepoint, since it is written before the
    call could fail)."""
    batch = group.batch
    floor: tuple[int, int] | None = group.floor
    nearby: list[KeyRecord] = []
    if key in group.locked:
        rec, now = group.locked[key], group.now
        if reach is not None and reach.scope == "subtree":  # the keys under it: a read
            nearby, now = _under(group, key, reach, clock)
    else:
        if guard:
            queue_key_locks(batch, key)
        row, now, floor, nearby = _lock(batch, key, reach, clock, group)
        rec = record(row)
    savepoint = False
    if rec is None and create:
        batch.add_sql(f"SAVEPOINT {SAVEPOINT}")
        row, now, floor, _ = _lock(batch, key, None, clock, create=True)
        rec = record(row)
        savepoint = True
    nearby += from_group(key, reach, known(group))
    return Locked(rec, now, floor, nearby, savepoint)


def _lock(
    batch: Batch,
    key: str,
    reach: Reach | None,
    clock: Clock | None,
    group: Group | None = None,
    create: bool = False,
) -> tuple[Any, int, tuple[int, int], list[KeyRecord]]:
    """Send what is queued, the subtree leases above (share-locked), a new key's placeholder
    row (if ``create``), the row lock, the token floor, the leases under a subtree
    (share-locked) and the instant: the row (or None), the instant, the floor (read in the
    same round trip: a new token costs no round trip of its own), the nearby leases. The
    rows are locked in key order (see the module's docstring)."""
    above = queue_above(batch, key, reach, known(group))
    if create:
        batch.add("create_lease_row", {"key": key})
    batch.add("lock_lease", {"key": key})
    batch.add("token_floor")
    under = queue_under(batch, key, reach, known(group))
    if clock is None:
        batch.add("now_ms")
    got = batch.all_rows(above + create + 2 + under + (clock is None))
    nearby = records(got[:above])
    got = got[above + create :]
    row = got[0][0] if got[0] else None
    floor = floors(got[1][0] if got[1] else None)
    nearby += records(got[2 : 2 + under])
    now = int(got[-1][0][0]) if clock is None else clock.now_ms()
    return row, now, floor, nearby


def _under(
    group: Group, key: str, reach: Reach, clock: Clock | None
) -> tuple[list[KeyRecord], int]:
    """In ``group``, a subtree acquisition of a key locked ahead: the unended lease under it
    and an instant read after it (a release, which takes no prefix lock, may have committed
    since the group's instant: the decision must not predate what it read)."""
    batch = group.batch
    batch.add("nearby_under", under_params(key, reach, known(group)))
    if clock is None:
        batch.add("now_ms")
    got = batch.all_rows(1 + (clock is None))
    now = int(got[1][0][0]) if clock is None else clock.now_ms()
    return records(got[:1]), now


def lock_ahead(group: Group, keys: list[str], clock: Clock | None) -> None:
    """A group's first round trip: the auth version, the keys' prefix locks, their rows and
    the subtree leases above them (locked in key order, with the leases under the keys that
    end in "/": :func:`lock_statement`), the subtree grants above them
    (:attr:`tenure.store.postgres.tx.Group.grants`), the token floor and the instant."""
    batch = group.batch
    batch.add("auth_version")
    locks = queue_locks(batch, keys)
    above = above_all(keys)
    batch.add(*lock_statement(keys, above))  # the rows near them too, in key order
    if above:  # the subtree grants above them (an acquisition under a prefix reads them)
        batch.add("subtree_grants_above", {"prefixes": above})
    batch.add("token_floor")
    if clock is None:
        batch.add("now_ms")
    got = batch.all_rows(3 + locks + bool(above) + (clock is None))
    group.auth_version = int(got[0][0][0])
    got = got[1 + locks :]
    found = {row[0]: record(row) for row in got[0]}
    group.locked = {k: found.get(k) for k in keys}  # a key without a row: None
    if above:
        group.subtrees = {p: r if live_subtree(r := found.get(p)) else None for p in above}
        group.grants = {row[0]: (int(row[1]), grant_lease(row)) for row in got[1]}
        group.grants_read = frozenset(above)
        got = got[1:]
    group.floor = floors(got[1][0] if got[1] else None)
    group.now = int(got[2][0][0]) if clock is None else clock.now_ms()


def grant_lease(row: Any) -> KeyRecord | None:
    """The prefix's lease of a ``subtree_grants_above`` row (``None``: no row)."""
    return rows.record_from(row[2:]) if row[2] is not None and row[3] else None


def floors(row: Any) -> tuple[int, int]:
    """The token floor and the retired-token mark (the ``token_floor`` query's row)."""
    return (int(row[0]), int(row[1])) if row else (0, 0)


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


def lock_statement(keys: Sequence[str], above: Sequence[str]) -> tuple[str, dict[str, Any]]:
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


def queue_above(batch: Batch, key: str, reach: Reach | None, known: Known) -> int:
    """Queue the read (and share locks) of the subtree leases above ``key`` for ``reach``,
    before the key's own row is locked (statements queued: 0 or 1); ``locked``, ``subtrees``:
    what a group knows (:func:`known`), not asked again."""
    if reach is None:
        return 0
    above = [p for p in ancestors(key) if p not in known.locked and p not in known.subtrees]
    if not above:
        return 0
    batch.add("nearby_subtrees", {"prefixes": above})
    return 1


def queue_under(batch: Batch, key: str, reach: Reach | None, known: Known) -> int:
    """Queue the read (and share locks) of the leases under ``key`` for a subtree ``reach``,
    after the key's own row is locked (statements queued: 0 or 1)."""
    if reach is None or reach.scope != "subtree":
        return 0
    batch.add("nearby_under", under_params(key, reach, known))
    return 1


def under_params(key: str, reach: Reach, known: Known) -> dict[str, Any]:
    """``nearby_under``'s parameters: the keys whose whole record the group has are skipped
    (those it locked; a subtree lease it read ahead, not a prefix it found none on)."""
    skip = [k for k in known.locked if under(key, k)]
    skip += [k for k, r in known.subtrees.items() if r is not None and under(key, k)]
    return {"prefix": key, "upper": upper_bound(key), "skip": skip, **reach._asdict()}


class Known(NamedTuple):
    """What a group knows near a key, not asked again: the records of the keys it locked (as it
    saved them last) and the subtree leases it read ahead (``None``: none on that prefix)."""

    locked: Mapping[str, KeyRecord | None]
    subtrees: Mapping[str, KeyRecord | None]


NOTHING_KNOWN = Known({}, {})


def known(group: Group | None) -> Known:
    """What ``group`` knows (nothing outside a group)."""
    return NOTHING_KNOWN if group is None else Known(group.locked, group.subtrees)


def records(found: Sequence[Sequence[Sequence[Any]]]) -> list[KeyRecord]:
    return [rows.record_from(r) for rows_ in found for r in rows_]


def from_group(key: str, reach: Reach | None, known: Known) -> list[KeyRecord]:
    """The records a group holds among the nearby leases of ``reach`` on ``key``: those of the
    keys it locked (as it saved them last), else the subtree leases it read ahead."""
    if reach is None:
        return []
    locked, subtrees = known
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
