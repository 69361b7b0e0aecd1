"""What a held lease or claim knows, with no I/O: :class:`_State` (the lease, the client's own
deadline, why it was lost; thread-safe) and :class:`_Handle` (the fields, ``lost`` and
``check()`` of every handle). The heartbeats that drive them are :mod:`tenure.client._held`
(a thread) and :mod:`tenure.client._held_aio` (an asyncio task)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from tenure.client import _wire as sh
from tenure.client._call import Call
from tenure.client._transport import RetryPolicy, jittered
from tenure.core.models import Lease
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import InvalidRequest, LeaseHeld, LeaseLost, NotHolder, TenureError
from tenure.verbs import leases as lv

C = TypeVar("C")  # the client: a blocking or an asyncio one

log = logging.getLogger("tenure.client")

DEADLINE = "deadline"  # lost_reason: the client's deadline passed without a renewal
RELEASE_RETRY = RetryPolicy(attempts=2, budget=1.0, backoff=0.05, max_backoff=0.2)
RELEASE_TIMEOUT_S = 2.0
JOIN_TIMEOUT_S = 1.0
CHUNK_PAUSE_S = 0.05


class _State:
    """What the handle knows about its lease; thread-safe, no I/O."""

    def __init__(self, key: str, ttl_s: float) -> None:
        self.key = key
        self.ttl_s = ttl_s
        self.term = ttl_s
        self.lease: Lease | None = None
        self.deadline = 0.0
        self.reason: str | None = None
        self.error: BaseException | None = None
        self.active = False
        self._lock = threading.Lock()

    def start(self, lease: Lease, sent: float) -> None:
        with self._lock:
            self.lease = lease
            self.term = min(self.ttl_s, lease.ttl_ms / 1000)
            self.deadline = sent + self.term
            self.active = True

    def accept(self, lease: Lease, sent: float, now: float) -> bool:
        """Take a renewal sent at ``sent``; false if the lease was lost before it came back."""
        with self._lock:
            if self._lapsed(now):
                return False
            self.lease = lease
            self.term = min(self.ttl_s, lease.ttl_ms / 1000)
            self.deadline = max(self.deadline, sent + self.term)
            self.error = None
            return True

    def _lapsed(self, now: float) -> bool:
        if self.reason is None and self.active and now >= self.deadline:
            self.reason = DEADLINE
        return self.reason is not None

    def lost(self, now: float) -> bool:
        with self._lock:
            return self._lapsed(now)

    def mark(self, reason: str, error: BaseException | None = None) -> None:
        with self._lock:
            if self.reason is None:
                self.reason, self.error = reason, error or self.error

    def stop(self, now: float) -> None:
        with self._lock:
            self._lapsed(now)
            self.active = False

    def next_renewal(self) -> float:
        """When the next renewal is due: a third of the term after the last one was sent."""
        return self.deadline - self.term + self.term / 3

    def backoff(self, failures: int) -> float:
        base = max(0.01, min(0.1, self.term / 20))
        return jittered(base, max(base, min(2.0, self.term / 6)), failures)

    def lost_error(self) -> LeaseLost:
        token = self.lease.token if self.lease else None
        if self.reason == DEADLINE:
            why = f" (last error: {_describe(self.error)})" if self.error else ""
            detail = f"the lease on {self.key!r} was not renewed before its deadline{why}"
        else:
            detail = f"the lease on {self.key!r} is lost: {self.reason}"
        return LeaseLost(detail, key=self.key, reason=self.reason, token=token)


class _Beat:
    """A heartbeat's schedule and its verdict on each try, with no I/O: both heartbeats (the
    thread and the task) run this same logic and differ only in how they wait and send."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.failures = 0
        self.retry_at = 0.0

    def pause(self, now: float) -> float | None:
        """Seconds to wait before the next try (0: try now), or ``None`` once the lease is lost."""
        if self.state.lost(now):
            return None
        due = self.state.next_renewal() if self.failures == 0 else self.retry_at
        return min(due, self.state.deadline) - now if now < due else 0.0

    def timeout(self, sent: float, client_timeout: float) -> float:
        """The timeout of a try sent at ``sent``: it never outlives the client's deadline."""
        return min(client_timeout, max(0.001, self.state.deadline - sent))

    def renewed(self, lease: Lease, sent: float) -> bool:
        """Take a renewal; false if the lease was lost before it came back."""
        if not self.state.accept(lease, sent, time.monotonic()):
            return False
        self.failures = 0
        return True

    def took(self, outcome: Lease | Exception, sent: float, key: str) -> bool:
        """Take the outcome of a try sent at ``sent``: false once the lease is lost."""
        if isinstance(outcome, Exception):
            return not self.failed(outcome, key)
        return self.renewed(outcome, sent)

    def failed(self, error: BaseException, key: str) -> bool:
        """Take a failed try: true if the server says the lease is gone (stop beating), else
        retry with backoff until the deadline (transient failures, a bug, an odd failure)."""
        if isinstance(error, TenureError) and sh.is_loss(error):
            self.state.mark(sh.loss_reason(error), error)
            return True
        if not isinstance(error, TenureError):
            log.debug("tenure: renewal of %r failed", key, exc_info=error)
        self.failures += 1
        self.state.error = error
        self.retry_at = time.monotonic() + self.state.backoff(self.failures)
        return False


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _check_args(ttl: float, wait: float | None) -> None:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise InvalidRequest("ttl: must be a positive number of seconds", field="ttl")
    if wait is not None and (
        isinstance(wait, bool) or not isinstance(wait, int | float) or not wait >= 0
    ):
        raise InvalidRequest("wait: must be a non-negative number of seconds", field="wait")


class _Handle(Generic[C]):
    """What every handle shares: its client, the lease's fields, ``lost`` and ``check()``.
    The heartbeat that drives it sets its own parts up in ``_init_heartbeat``."""

    def __init__(
        self,
        client: C,
        key: str,
        ttl: float = 30.0,
        task: str | None = None,
        meta: dict[str, Any] | None = None,
        wait: float | None = None,
        on_lost: Callable[[Any], object] | None = None,
        scope: str | None = None,
        slots: int | None = None,
    ) -> None:
        _check_args(ttl, wait)
        self.key = key  # a semaphore's: its slot's key once granted (``gpu#slot/1``)
        self.scope = scope  # "subtree": every key under ``key`` too (None: the key alone)
        self.slots = slots  # ``key`` is a semaphore of this many slots (None: a plain lock)
        self.ttl = float(ttl)
        self.task = task
        self.meta = meta
        self.wait = wait
        self._state = _State(key, self.ttl)
        self._entered = False
        self._released = False
        self._reported = False
        # Set by a subclass that ends the lease itself (an item's completion), under the
        # heartbeat's lock, so no renewal races the ending.
        self._finished = False
        # Set when the block itself learned of the loss from an exception of its own call (an
        # item's stale epoch): an async heartbeat then does not cancel it on top.
        self._spare_host = False
        self._client = client
        self._on_lost = on_lost
        self._init_heartbeat()

    def _init_heartbeat(self) -> None:
        raise NotImplementedError

    def _held(self) -> Lease:
        lease = self._state.lease
        if lease is None:
            raise RuntimeError("the lease is not acquired yet (enter the handle first)")
        return lease

    @property
    def lease(self) -> Lease:
        """The latest lease the server returned (acquire or renew)."""
        return self._held()

    @property
    def token(self) -> int:
        """The fencing token: pass it to every write the lease protects."""
        return self._held().token

    @property
    def expires_at(self) -> int:
        """The server's deadline (epoch ms) as of the latest renewal."""
        return self._held().expires_at

    @property
    def deadline(self) -> float:
        """The client's deadline, on :func:`time.monotonic`'s clock."""
        return self._state.deadline

    @property
    def lost(self) -> bool:
        """Whether the lease is lost (it stays lost)."""
        lost = self._state.lost(time.monotonic())
        if lost:
            self._reported = True
        return lost

    @property
    def lost_reason(self) -> str | None:
        """Why the lease was lost, ``None`` while it is not."""
        self._state.lost(time.monotonic())
        return self._state.reason

    def check(self) -> None:
        """Raise :class:`~tenure.LeaseLost` if the lease is lost (or was released)."""
        lease = self._held()
        if self._state.lost(time.monotonic()):
            self._reported = True
            raise self._state.lost_error()
        if self._released:
            raise LeaseLost(
                f"the lease on {self.key!r} was released",
                key=self.key,
                reason="released",
                token=lease.token,
            )

    def _wait_ms(self, give_up: float) -> int | None:
        if self.wait is None:
            return None
        return min(MAX_WAIT_MS, max(0, int((give_up - time.monotonic()) * 1000)))

    def _acquire_call(self, give_up: float, session: str) -> Call[Lease]:
        ttl_ms = max(1, round(self.ttl * 1000))
        wait_ms = self._wait_ms(give_up)
        return lv.ACQUIRE.call(
            key=self.key, ttl_ms=ttl_ms, task=self.task, meta=self.meta, wait_ms=wait_ms,
            session=session, scope=self.scope, slots=self.slots,
        )  # fmt: skip

    def _granted_key(self, lease: Lease) -> None:
        """A semaphore's grant is a slot's lease: the handle holds, renews and releases that
        slot's key from then on."""
        if self.key != lease.key:
            self.key = self._state.key = lease.key

    def _pause_or_raise(self, held: LeaseHeld, give_up: float) -> float:
        """How long to pause before polling on after ``held`` (a long poll's chunk ended), or
        raise it when there is no more time to wait."""
        left = give_up - time.monotonic()
        if self.wait is None or left <= 0:
            raise held
        return min(CHUNK_PAUSE_S, left)

    def _confirm_needed(self, sent: float) -> bool:
        """A reply that took a third of the ttl (a long poll): renew at once to get a deadline."""
        return time.monotonic() - sent > self.ttl / 3

    def _outcome(self, exc: BaseException | None) -> None:
        """After the heartbeat stopped: raise LeaseLost if the block ends unaware of a loss."""
        if self._state.reason is None:
            return
        error = self._state.lost_error()
        if exc is not None:
            if not isinstance(exc, LeaseLost):
                exc.add_note(f"tenure: {error.detail}")
            return
        if not self._reported:
            self._reported = True
            raise error

    def _run_on_lost(self) -> object:
        """Run the ``on_lost`` callback, if any (once, from the heartbeat); what it returned."""
        if self._on_lost is None:
            return None
        self._reported = True
        try:
            return self._on_lost(self)
        except Exception:
            log.exception("tenure: the on_lost callback of %r failed", self.key)
            return None

    def _release_failed(self, token: int, exc: Exception) -> None:
        """Log why a best-effort release failed (the lease then lapses at its deadline)."""
        if isinstance(exc, NotHolder):  # lost and taken by someone else: nothing of ours
            log.debug("tenure: %r (token %s) was no longer ours: %s", self.key, token, exc)
        else:
            log.warning("tenure: could not release %r (token %s): %s", self.key, token, exc)

    def _should_release(self) -> bool:
        # A lease the server called gone has nothing left to release; one lost to the deadline
        # may still be live on the server (only the client gave up on it): release it.
        return not self._released and self._state.reason in (None, DEADLINE)

    def __repr__(self) -> str:
        lease = self._state.lease
        token = lease.token if lease else None
        state = "lost" if self._state.reason else ("held" if self._state.active else "idle")
        return f"<{type(self).__name__} {self.key!r} token={token} {state}>"
