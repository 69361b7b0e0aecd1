"""How tokens order a subtree lease and the keys under it (pure functions: no I/O).

Tokens grow per key. Across a subtree and the keys under it they are made comparable: a subtree
lease on ``P/`` gets a token above every token ever granted on a key under ``P/``, and a key
under ``P/`` acquired afterwards gets a token above the latest token granted to a subtree lease
on any prefix above it. So once a subtree lease on ``P/`` is granted with token ``T``, every
token older than ``T`` on a key under ``P/`` is stale for the fenced register there, and ``T``
is the current token of those keys (for the subtree's holder) until one of them is acquired
again.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenure.core.models import KeyRecord, Scope
from tenure.core.subtree import ancestors
from tenure.core.work import ITEM_PREFIX


def prefixes_above(key: str) -> tuple[str, ...]:
    """The prefixes whose subtree tokens order ``key`` (none for an item's key: no subtree
    covers it)."""
    return () if key.startswith(ITEM_PREFIX) else ancestors(key)


@dataclass(frozen=True)
class GrantAbove:
    """The latest token granted to a subtree lease above a key, and that prefix's lease as it
    is now (``None``: its row is gone)."""

    token: int
    lease: KeyRecord | None

    def holds(self) -> KeyRecord | None:
        """The subtree lease that carries :attr:`token` still (no acquisition of the prefix
        since, no force-release), or ``None``."""
        rec = self.lease
        ok = rec is not None and rec.token == self.token and rec.scope == "subtree"
        return rec if ok and rec is not None and rec.fence_open else None


def tree_floor(scope: Scope, above: GrantAbove | None, under: int) -> int:
    """What a new token of a key must exceed besides the key's own last token and the token
    floor: the latest subtree token above it, and for a subtree lease every token under it."""
    floor = above.token if above is not None else 0
    return max(floor, under) if scope == "subtree" else floor


def current_above(own: KeyRecord | None, above: GrantAbove | None) -> GrantAbove | None:
    """The subtree grant that is the current token of a key for its fenced register (its
    token is newer than the key's own), or ``None``: the key's own lease decides."""
    if above is None or (own is not None and own.token >= above.token):
        return None
    return above
