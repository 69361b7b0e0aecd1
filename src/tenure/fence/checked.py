"""Checked mode: a fence that asks tenure whether a token is the key's current, live one.

A plain fence knows only the tokens it has seen, so it admits any token larger than those:
one tenure never issued (a caller who sends ``2**62`` would jam the key), or one whose lease
was force-released or has ended. :class:`CheckedFence` first asks tenure (``GET
/v1/leases/{key}``) and admits a token only if it is the key's latest token and its lease is
live; then it admits the token in the fence it wraps (if any), which refuses anything below the
largest token seen. A positive answer is cached per ``(key, token)`` for ``cache`` times the
lease's ttl: for that long a revoked token may still pass the check (never once a larger
token has been admitted in the wrapped fence).
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from tenure.core.models import Lease
from tenure.errors import InvalidRequest, NotFound, StaleToken
from tenure.fence._args import check_key, check_token


class LeaseReader(Protocol):
    """What the check needs from a tenure client: ``get_lease(key)``."""

    def get_lease(self, key: str) -> Lease: ...


class CheckedFence:
    """Admit ``(key, token)`` only if tenure issued ``token`` as ``key``'s latest and live
    lease, then in ``fence`` (a :class:`~tenure.fence.KeyFence` or anything with
    ``admit(key, token)``; ``None`` for the check alone)."""

    blocking = True

    def __init__(
        self,
        tenure: LeaseReader,
        fence: Any = None,
        *,
        cache: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(cache, bool) or not isinstance(cache, int | float) or not 0 <= cache < 1:
            raise InvalidRequest("cache: a fraction of the ttl in [0, 1)", field="cache")
        if inspect.iscoroutinefunction(getattr(tenure, "get_lease", None)):
            raise InvalidRequest(
                "tenure: CheckedFence asks from a worker thread; give it a tenure.Client, "
                "not an AsyncClient",
                field="tenure",
            )
        self.tenure = tenure
        self.fence = fence
        self.cache = float(cache)
        self.clock = clock
        self._until: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def check(self, key: str, token: int) -> int:
        """Raise :class:`tenure.StaleToken` unless ``token`` is ``key``'s current live token."""
        key, token = check_key(key), check_token(token)
        now = self.clock()
        with self._lock:
            if self._until.get((key, token), 0.0) > now:
                return token
        lease = self._lease(key, token)
        if lease.token != token or lease.state != "live":
            raise _refusal(key, token, lease)
        with self._lock:
            self._forget(now)
            self._until[(key, token)] = now + self.cache * lease.ttl_ms / 1000
        return token

    def admit(self, key: str, token: int) -> int:
        """:meth:`check`, then admit in the wrapped fence."""
        self.check(key, token)
        if self.fence is not None:
            self.fence.admit(key, token)
        return token

    def current(self, key: str) -> int | None:
        """The wrapped fence's largest admitted token (``None`` without one)."""
        if self.fence is None or not hasattr(self.fence, "current"):
            return None
        found: int | None = self.fence.current(key)
        return found

    def _lease(self, key: str, token: int) -> Lease:
        try:
            return self.tenure.get_lease(key)
        except NotFound:
            raise StaleToken(
                f"token {token} for {key!r} was never issued: tenure has no lease on the key",
                key=key,
                token=token,
                current_token=None,
            ) from None

    def _forget(self, now: float) -> None:
        if len(self._until) > 10_000:
            self._until = {k: t for k, t in self._until.items() if t > now}


def _refusal(key: str, token: int, lease: Lease) -> StaleToken:
    if token > lease.token:
        why = f"was never issued (tenure's latest token for the key is {lease.token})"
    elif token < lease.token:
        why = f"is stale: tenure has since issued {lease.token}"
    else:
        why = f"belongs to a lease that is {lease.state}"
    return StaleToken(
        f"token {token} for {key!r} {why}", key=key, token=token, current_token=lease.token
    )
