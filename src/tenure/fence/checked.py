"""Checked mode: a fence that asks tenure whether a token is the key's current, live one.

A plain fence knows only the tokens it has seen, so it admits any token larger than those:
one tenure never issued (a caller who sends ``2**62`` would jam the key), or one whose lease
was force-released or has ended. :class:`CheckedFence` first asks tenure (``GET
/v1/leases/{key}``) and admits a token only if it is the key's latest token and its lease is
live; then it admits the token in the fence it wraps (if any), which refuses anything below the
largest token seen. A positive answer is cached per ``(key, token)`` for ``cache`` seconds (at
most one second, so a release, force-release or newer acquisition tenure saw ends it within a
second) and never past the lease's deadline as tenure gave it, less ``skew`` seconds for the
difference between the clocks. When tenure cannot be reached the check refuses
(:class:`tenure.Unavailable`): it fails closed.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from tenure.core.models import Lease
from tenure.errors import (
    Forbidden,
    InvalidRequest,
    NotFound,
    StaleToken,
    TenureError,
    Unauthenticated,
    Unavailable,
)
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
        cache: float = 1.0,
        skew: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if not _seconds(cache, 1.0):
            raise InvalidRequest("cache: seconds in [0, 1]", field="cache")
        if not _seconds(skew, 3600.0):
            raise InvalidRequest("skew: seconds in [0, 3600]", field="skew")
        if inspect.iscoroutinefunction(getattr(tenure, "get_lease", None)):
            raise InvalidRequest(
                "tenure: CheckedFence asks from a worker thread; give it a tenure.Client, "
                "not an AsyncClient",
                field="tenure",
            )
        self.tenure = tenure
        self.fence = fence
        self.cache = float(cache)
        self.skew = float(skew)
        self.clock = clock
        self.wall = wall
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
        left = lease.expires_at / 1000 - self.wall() - self.skew
        with self._lock:
            self._forget(now)
            if min(self.cache, left) > 0:
                self._until[(key, token)] = now + min(self.cache, left)
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
        except (Unauthenticated, Forbidden, InvalidRequest):
            raise
        except Exception as exc:
            raise _unreachable(key, token, exc) from exc

    def _forget(self, now: float) -> None:
        if len(self._until) > 10_000:
            self._until = {k: t for k, t in self._until.items() if t > now}


def _seconds(value: object, most: float) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 <= value <= most


def _unreachable(key: str, token: int, exc: Exception) -> Unavailable:
    why = exc.detail if isinstance(exc, TenureError) else f"{type(exc).__name__}: {exc}"
    return Unavailable(
        f"the fence could not ask tenure whether token {token} for {key!r} is current ({why}), "
        "so it refuses the write (it fails closed); retry once tenure answers"
    )


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
