"""Per-principal bounds: what one principal (an admin too) may have at once, or make in a
minute, so that no client can flood the server for everyone else.

- live leases (item claims included) when ``acquire`` grants a new one; re-acquiring or
  renewing a lease you hold is not a new one;
- items created per minute of the server's clock (``create``, a completion's ``follow_ups``);
- dispatched agents still working (their claim live) when ``dispatch`` makes another.

The counting is the store's, in the transaction that would add one (:mod:`tenure.store`); the
rule here is pure.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from tenure.errors import QuotaExceeded

MINUTE_MS = 60_000
DEFAULT_MAX_LIVE_LEASES = 10_000
DEFAULT_MAX_ITEMS_PER_MINUTE = 600
DEFAULT_MAX_LIVE_AGENTS = 100

#: the setting (environment variable) of each bound
SETTINGS = {
    "live_leases": "TENURE_MAX_LIVE_LEASES",
    "items_per_minute": "TENURE_MAX_ITEMS_PER_MINUTE",
    "live_agents": "TENURE_MAX_LIVE_AGENTS",
}


@dataclass(frozen=True)
class Quotas:
    """The bounds of every principal: live leases, items created per minute, live agents."""

    live_leases: int = DEFAULT_MAX_LIVE_LEASES
    items_per_minute: int = DEFAULT_MAX_ITEMS_PER_MINUTE
    live_agents: int = DEFAULT_MAX_LIVE_AGENTS

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{SETTINGS[f.name]} must be a positive integer, got {value!r}")


def minute_of(now: int) -> int:
    """The minute of the server's clock ``now`` falls in (items are counted per minute)."""
    return now // MINUTE_MS


def refuse_lease(who: str, key: str, limit: int, current: int) -> QuotaExceeded:
    said = f"{who!r} holds {current} live leases, the most one principal may hold"
    return _exceeded(
        "live_leases", limit, current, said, f"release some before acquiring {key!r}", key=key
    )


def refuse_items(who: str, limit: int, current: int, adding: int, now: int) -> QuotaExceeded:
    left_s = -(-(MINUTE_MS - now % MINUTE_MS) // 1000)  # the rest of the minute, rounded up
    said = (
        f"{who!r} created {current} items this minute and asked for {adding} more, past the "
        "most one principal may create in a minute"
    )
    return _exceeded(
        "items_per_minute", limit, current, said, f"try again in {left_s} s", retry_after_s=left_s
    )


def refuse_agent(who: str, item_key: str, limit: int, current: int) -> QuotaExceeded:
    said = f"{who!r} has {current} dispatched agents still working, the most one principal may have"
    return _exceeded(
        "live_agents",
        limit,
        current,
        said,
        "wait for one to end before dispatching more",
        key=item_key,
    )


def _exceeded(
    quota: str, limit: int, current: int, said: str, then: str, **more: Any
) -> QuotaExceeded:
    """``429 quota_exceeded`` of ``quota``: ``said`` names what the caller has, ``then`` what
    to do; the setting and its limit stand between them."""
    setting = SETTINGS[quota]
    return QuotaExceeded(
        f"{said} ({setting}={limit}): {then}", limit=limit, current=current, setting=setting, **more
    )
