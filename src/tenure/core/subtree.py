"""Subtree leases: which live leases on *other* keys an acquisition conflicts with.

A subtree lease on ``P/`` (a key ending in ``/``, scope ``"subtree"``) holds every key under
it. It conflicts with any live lease on a key starting with ``P/`` and with any live subtree
lease on a proper prefix of ``P/`` ending in ``/``; a plain key ``K`` conflicts with a live
subtree lease on any prefix of ``K`` ending in ``/``. Leases of the same principal *and*
session never block each other this way. (The lease on the key itself is the key's own
record, decided as ever: one holder per key.) Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from tenure.core.models import KeyRecord, Scope

SEP = "/"


@lru_cache(maxsize=16384)
def ancestors(key: str) -> tuple[str, ...]:
    """The proper prefixes of ``key`` that end in ``/``, shortest first (``a/b/c`` →
    ``a/``, ``a/b/``; ``a/b/`` → ``a/``). Cached: a server asks it of the same keys again and
    again (a group's locks, each acquisition's nearby leases)."""
    found = []
    at = key.find(SEP)
    while 0 <= at < len(key) - 1:
        found.append(key[: at + 1])
        at = key.find(SEP, at + 1)
    return tuple(found)


def under(prefix: str, key: str) -> bool:
    """``key`` lies strictly under the subtree ``prefix`` (``a/b/`` covers ``a/b/c``, not
    ``a/bc`` nor ``a/b/`` itself)."""
    return len(key) > len(prefix) and key.startswith(prefix)


def upper_bound(prefix: str) -> str:
    """The smallest string above every key starting with ``prefix`` (which ends in ``/``), in
    code point order: ``a/b/`` → ``a/b0``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def reaches(key: str, scope: Scope, other: KeyRecord) -> bool:
    """Whether a ``scope`` lease on ``key`` and ``other`` (on another key) conflict by their
    places in the tree, whoever holds them."""
    if other.key == key:
        return False
    if other.scope == "subtree" and under(other.key, key):
        return True
    return scope == "subtree" and under(key, other.key)


def blocking(
    key: str,
    scope: Scope,
    holder: str,
    session: str,
    candidates: Iterable[KeyRecord],
    now: int,
) -> KeyRecord | None:
    """The live lease, among ``candidates`` (any superset of the leases that may conflict),
    that stops ``holder``'s ``session`` taking ``key`` with ``scope``: the nearest subtree
    above first, else, under it, the lease that lapses last (then the smallest key): the
    subtree is free no sooner; ``None`` if nothing does."""
    found: KeyRecord | None = None
    for rec in candidates:
        if not rec.is_live(now) or (rec.holder == holder and rec.session == session):
            continue
        if not reaches(key, scope, rec):
            continue
        if found is None or _before(rec, found, key):
            found = rec
    return found


def _before(a: KeyRecord, b: KeyRecord, key: str) -> bool:
    """``a`` is named before ``b``: a subtree above before a key under; the nearer subtree
    above; under, the later deadline, then the smaller key (the stores read the lease under a
    prefix that lapses last: ``nearby_under``)."""
    a_above, b_above = under(a.key, key), under(b.key, key)
    if a_above != b_above:
        return a_above
    if a_above:
        return len(a.key) > len(b.key)
    return (-a.expires_at, a.key) < (-b.expires_at, b.key)
