"""Deployment policy (SPEC section 3) with per-key-prefix overrides."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
#: the settings where 0 means "never" (every other one is a positive integer)
MAY_BE_ZERO = frozenset({"max_attempts"})


@dataclass(frozen=True)
class Policy:
    """Limits for one key. Durations are milliseconds, sizes bytes."""

    default_ttl: int = 30 * SECOND
    min_ttl: int = 1 * SECOND
    max_ttl: int = 10 * MINUTE
    max_lease: int = 24 * HOUR
    max_key_bytes: int = 512
    max_meta_bytes: int = 4 * 1024
    max_value_bytes: int = 1024 * 1024
    #: a live claim without progress for this long is ``stalled`` (recorded once, and open to a
    #: takeover with a reason)
    stall_after: int = 10 * MINUTE
    #: compaction deletes the lease row of a key whose last lease ended (and whose deadline
    #: passed) this long ago; its token stays covered by the retired-token mark
    lease_retention: int = 7 * DAY
    #: how long a write's op_id is remembered (a retry within it gets the first result)
    op_window: int = 24 * HOUR
    #: an item whose claims failed (lapsed, or the command exited non-zero) this many times is
    #: ``parked`` until a person reopens it; 0: never parked
    max_attempts: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            low = 0 if f.name in MAY_BE_ZERO else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                what = "a non-negative" if low == 0 else "a positive"
                raise ValueError(f"policy {f.name} must be {what} integer, got {value!r}")
        if not self.min_ttl <= self.default_ttl <= self.max_ttl:
            raise ValueError("policy needs min_ttl <= default_ttl <= max_ttl")
        if self.max_lease < self.max_ttl:
            raise ValueError("policy needs max_lease >= max_ttl")

    def override(self, **changes: Any) -> Policy:
        return replace(self, **changes)


#: the files an agent edits (a harness hook's keys, ``files/<repo>/<path>``): a session that
#: dies without ending lets go of them after this long
FILES_PREFIX = "files/"
FILES_TTL = 10 * MINUTE


def builtin_changes(default: Policy) -> dict[str, dict[str, int]]:
    """The built-in overrides, by prefix, that fit ``default``: ``files/`` gets a default TTL
    of :data:`FILES_TTL` (within the default's ``min_ttl`` and ``max_lease``; its ``max_ttl``
    raised to it when lower). Its ``max_ttl`` stays the default's otherwise: the OpenAPI
    document publishes the widest bound of any prefix as every key's."""
    ttl = max(default.min_ttl, min(FILES_TTL, default.max_lease))
    return {FILES_PREFIX: {"default_ttl": ttl, "max_ttl": max(ttl, default.max_ttl)}}


@dataclass(frozen=True)
class PolicySet:
    """A default policy and overrides by key prefix; the longest matching prefix wins.

    The built-in overrides (:func:`builtin_changes`: ``files/``) are there unless ``overrides``
    names their prefix; an override of that prefix with :meth:`with_prefix` starts from them."""

    default: Policy = field(default_factory=Policy)
    overrides: tuple[tuple[str, Policy], ...] = ()

    def __post_init__(self) -> None:
        named = {prefix for prefix, _ in self.overrides}
        builtin = tuple(
            (prefix, self.default.override(**changes))
            for prefix, changes in builtin_changes(self.default).items()
            if prefix not in named
        )
        if builtin:
            object.__setattr__(self, "overrides", (*builtin, *self.overrides))

    def with_prefix(self, prefix: str, **changes: Any) -> PolicySet:
        """A copy with ``changes`` applied (on top of the default, or of the built-in override
        of ``prefix``) to keys under ``prefix``."""
        if not prefix:
            raise ValueError("an override needs a non-empty prefix")
        rest = tuple((p, pol) for p, pol in self.overrides if p != prefix)
        base = builtin_changes(self.default).get(prefix, {})
        mine = self.default.override(**{**base, **changes})
        return PolicySet(self.default, (*rest, (prefix, mine)))

    def shortest_stall(self) -> int:
        """The shortest ``stall_after`` of any prefix: claims idle for less are not stalled."""
        return min((self.default, *(p for _, p in self.overrides)), key=_stall).stall_after

    def for_key(self, key: str) -> Policy:
        best: tuple[int, Policy] = (-1, self.default)
        for prefix, pol in self.overrides:
            if key.startswith(prefix) and len(prefix) > best[0]:
                best = (len(prefix), pol)
        return best[1]


def _stall(policy: Policy) -> int:
    return policy.stall_after
