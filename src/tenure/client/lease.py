"""Lease handles: hold a lease while a block runs, with a heartbeat that keeps it alive.

``with client.lease(key, ttl=30) as lease:`` acquires ``key`` (waiting up to ``wait`` seconds),
renews it every ``ttl``/3 seconds in the background (a thread for :class:`LeaseHandle`, a task
for :class:`AsyncLeaseHandle`), and releases it on exit, also when the block raises. The lease
is the client's session's (``client.session``): another client of the same principal waits or
is refused (:class:`~tenure.LeaseHeld`) like anyone else, and the heartbeat renews this lease
by its token only.

**The client's own deadline.** The heartbeat keeps a deadline measured on this process's
monotonic clock: the instant the last *successful* acquire or renew request was *sent*, plus the
lease's ttl. The server's deadline is at least that late (it renewed after the request left), so
a slow reply can only make the client more careful, and clocks never have to agree.

**Transient failures** of a renewal (no connection, timeouts, 5xx, 429, any reply that is not a
verdict on the lease) are retried with exponential backoff and jitter until that deadline; each
try's timeout ends at the deadline.

**A lost lease is never silent.** The lease is lost when the deadline passes without a
successful renewal (``lost_reason == "deadline"``) or when the server says it is gone
(``lease_lost`` gives its reason: ``expired``, ``released``, ``force_released``,
``taken_over``; ``not_holder``, ``stale_token`` and ``not_found`` name themselves). Then
``lease.lost`` is true, ``lease.check()`` raises :class:`~tenure.LeaseLost` with the reason, and
the optional ``on_lost(lease)`` callback runs once (in the heartbeat thread or task; a coroutine
it returns is scheduled). The async variant also cancels the task that entered the block and,
on the way out, turns that cancellation into :class:`~tenure.LeaseLost` (like
:func:`asyncio.timeout` does with ``TimeoutError``, with ``Task.uncancel()``, so a cancellation
from outside still propagates as such). If the block ends normally although the lease was lost
and it never learned so (from ``check()``, ``lost`` or ``on_lost``), leaving it raises
:class:`~tenure.LeaseLost`; if the block raised, its exception propagates with a note.

On exit the heartbeat stops and the lease is released, best effort: a failing release is logged,
never raised over the block's own exception (the lease then lapses at its deadline).

The machinery (``_SyncHeld``, ``_AsyncHeld``) is shared with the work handles of
:mod:`tenure.client.work`, which hold an item's claim: they say how to acquire (claim), renew
and release through three hooks.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from tenure.client import _shared as sh
from tenure.client._shared import Call, RetryPolicy
from tenure.core.models import Lease, ReleaseResult
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import InvalidRequest, LeaseHeld, LeaseLost, NotHolder, TenureError

if TYPE_CHECKING:
    from tenure.client.aio import AsyncClient
    from tenure.client.sync import Client

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
        return sh.jittered(base, max(base, min(2.0, self.term / 6)), failures)

    def lost_error(self) -> LeaseLost:
        token = self.lease.token if self.lease else None
        if self.reason == DEADLINE:
            why = f" (last error: {_describe(self.error)})" if self.error else ""
            detail = f"the lease on {self.key!r} was not renewed before its deadline{why}"
        else:
            detail = f"the lease on {self.key!r} is lost: {self.reason}"
        return LeaseLost(detail, key=self.key, reason=self.reason, token=token)


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _check_args(ttl: float, wait: float | None) -> None:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise InvalidRequest("ttl: must be a positive number of seconds", field="ttl")
    if wait is not None and (
        isinstance(wait, bool) or not isinstance(wait, int | float) or not wait >= 0
    ):
        raise InvalidRequest("wait: must be a non-negative number of seconds", field="wait")


class _Handle:
    """What both handles share: the lease's fields, ``lost`` and ``check()``."""

    def __init__(
        self,
        key: str,
        ttl: float,
        task: str | None,
        meta: dict[str, Any] | None,
        wait: float | None,
    ) -> None:
        _check_args(ttl, wait)
        self.key = key
        self.ttl = float(ttl)
        self.task = task
        self.meta = meta
        self.wait = wait
        self._state = _State(key, self.ttl)
        self._entered = False
        self._released = False
        self._reported = False

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

    def _should_release(self) -> bool:
        # A lease the server called gone has nothing left to release; one lost to the deadline
        # may still be live on the server (only the client gave up on it): release it.
        return not self._released and self._state.reason in (None, DEADLINE)

    def __repr__(self) -> str:
        lease = self._state.lease
        token = lease.token if lease else None
        state = "lost" if self._state.reason else ("held" if self._state.active else "idle")
        return f"<{type(self).__name__} {self.key!r} token={token} {state}>"


class _SyncHeld(_Handle):
    """The machinery of a handle held by a :class:`~tenure.client.Client`: entering, the
    heartbeat thread, leaving. Subclasses say how to acquire, renew and release (the hooks
    ``_acquire``, ``_renew_call`` and ``_release_call``)."""

    def __init__(
        self,
        client: Client,
        key: str,
        ttl: float,
        task: str | None,
        meta: dict[str, Any] | None,
        wait: float | None,
        on_lost: Callable[[Any], object] | None,
    ) -> None:
        super().__init__(key, ttl, task, meta, wait)
        self._client = client
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._lost_event = threading.Event()
        self._thread: threading.Thread | None = None
        # Held around each renewal; a subclass that ends the lease itself (an item's
        # completion) holds it too and sets _finished, so no renewal races the ending.
        self._beat_lock = threading.Lock()
        self._finished = False

    # hooks ------------------------------------------------------------------------------------
    def _acquire(self) -> tuple[Lease, float]:
        raise NotImplementedError

    def _renew_call(self, token: int) -> Call[Lease]:
        raise NotImplementedError

    def _release_call(self, token: int) -> Call[Any]:
        raise NotImplementedError

    def wait_lost(self, timeout: float | None = None) -> bool:
        """Block until the lease is lost (true) or ``timeout`` seconds pass (false)."""
        lost = self._lost_event.wait(timeout)
        self._reported = self._reported or lost
        return lost

    # entering and leaving -------------------------------------------------------------------
    def __enter__(self) -> Self:
        if self._entered:
            raise RuntimeError("a lease handle can be entered only once")
        self._entered = True
        lease, sent = self._acquire()
        self._state.start(lease, sent)
        self._thread = threading.Thread(
            target=self._beat, name=f"tenure-heartbeat {self.key}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop_heartbeat()
        if self._should_release():
            self._release_quietly()
        self._outcome(exc)

    def _stop_heartbeat(self) -> None:
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_TIMEOUT_S)  # a try still in flight is ignored once it returns
        self._state.stop(time.monotonic())

    def _release_quietly(self) -> None:
        lease = self._state.lease
        if lease is not None:
            self._quiet_release(lease.token)
        self._released = True

    def _quiet_release(self, token: int) -> None:
        try:
            self._client._timed(
                self._release_call(token),
                retry=RELEASE_RETRY,
                timeout=min(self._client.timeout, RELEASE_TIMEOUT_S),
            )
        except NotHolder as exc:  # lost and taken by someone else: nothing of ours to release
            log.debug("tenure: %r (token %s) was no longer ours: %s", self.key, token, exc)
        except Exception as exc:
            log.warning("tenure: could not release %r (token %s): %s", self.key, token, exc)

    # the heartbeat --------------------------------------------------------------------------
    def _beat(self) -> None:
        state = self._state
        failures, retry_at = 0, 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if state.lost(now):
                break
            due = state.next_renewal() if failures == 0 else retry_at
            if now < due:
                self._stop.wait(min(due, state.deadline) - now)
                continue
            with self._beat_lock:
                if self._finished:
                    return
                lease = self._held()
                call = self._renew_call(lease.token)
                sent = time.monotonic()
                limit = max(0.001, state.deadline - sent)
                try:
                    renewed = sh.interpret(
                        call, self._client._send_once(call, min(self._client.timeout, limit))
                    )
                except TenureError as err:
                    if self._stop.is_set():
                        return
                    if sh.is_loss(err):
                        state.mark(sh.loss_reason(err), err)
                        break
                    error: BaseException = err
                except Exception as err:  # a bug or an odd failure: keep trying until the deadline
                    log.debug("tenure: renewal of %r failed", self.key, exc_info=True)
                    error = err
                else:
                    if self._stop.is_set():
                        return
                    if state.accept(renewed, sent, time.monotonic()):
                        failures = 0
                        continue
                    break
            failures += 1
            state.error = error
            retry_at = time.monotonic() + state.backoff(failures)
        self._lost()

    def _lost(self) -> None:
        if self._state.reason is None:
            return
        self._lost_event.set()
        log.warning("tenure: %s", self._state.lost_error().detail)
        if self._on_lost is not None:
            self._reported = True
            try:
                self._on_lost(self)
            except Exception:
                log.exception("tenure: the on_lost callback of %r failed", self.key)


class LeaseHandle(_SyncHeld):
    """A lease held by a :class:`~tenure.client.Client` with a heartbeat thread.

    Use it as a context manager (``with client.lease(...) as lease``); see the module's
    documentation for how a lost lease is reported.
    """

    def __init__(
        self,
        client: Client,
        key: str,
        ttl: float = 30.0,
        task: str | None = None,
        meta: dict[str, Any] | None = None,
        wait: float | None = None,
        on_lost: Callable[[LeaseHandle], object] | None = None,
    ) -> None:
        super().__init__(client, key, ttl, task, meta, wait, on_lost)

    def release(self) -> ReleaseResult:
        """Stop the heartbeat and release the lease now (errors raise, unlike on exit)."""
        self._held()
        self._stop_heartbeat()
        result = self._client.release(self.key, self.token)
        self._released = True
        return result

    def _renew_call(self, token: int) -> Call[Lease]:
        return sh.renew(self.key, token)

    def _release_call(self, token: int) -> Call[Any]:
        return sh.release(self.key, token)

    def _acquire(self) -> tuple[Lease, float]:
        give_up = time.monotonic() + (self.wait or 0)
        ttl_ms = max(1, round(self.ttl * 1000))
        while True:
            call = sh.acquire(
                self.key, ttl_ms, self.task, self.meta, self._wait_ms(give_up), self._client.session
            )
            try:
                lease, sent = self._client._timed(call)
            except LeaseHeld:
                left = give_up - time.monotonic()
                if self.wait is None or left <= 0:
                    raise
                time.sleep(min(CHUNK_PAUSE_S, left))  # a long poll's chunk ended: poll on
                continue
            if not self._confirm_needed(sent):
                return lease, sent
            try:
                return self._client._timed(sh.renew(self.key, lease.token))
            except BaseException:
                self._quiet_release(lease.token)
                raise


class _AsyncHeld(_Handle):
    """The machinery of a handle held by an :class:`~tenure.client.AsyncClient`: entering, the
    heartbeat task, cancelling the block on a loss, leaving. Subclasses say how to acquire,
    renew and release (``_acquire``, ``_renew_call``, ``_release_call``)."""

    def __init__(
        self,
        client: AsyncClient,
        key: str,
        ttl: float,
        task: str | None,
        meta: dict[str, Any] | None,
        wait: float | None,
        on_lost: Callable[[Any], object] | None,
    ) -> None:
        super().__init__(key, ttl, task, meta, wait)
        self._client = client
        self._on_lost = on_lost
        self._lost_event = asyncio.Event()
        self._beater: asyncio.Task[None] | None = None
        self._host: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self._cancelled_host = False
        self._exiting = False
        self._callbacks: set[asyncio.Future[Any]] = set()
        self._beat_lock = asyncio.Lock()  # see _SyncHeld
        self._finished = False
        # Set when the block itself learned of the loss from an exception of its own call (an
        # item's stale epoch): the heartbeat then does not cancel it on top.
        self._spare_host = False

    # hooks ------------------------------------------------------------------------------------
    async def _acquire(self) -> tuple[Lease, float]:
        raise NotImplementedError

    def _renew_call(self, token: int) -> Call[Lease]:
        raise NotImplementedError

    def _release_call(self, token: int) -> Call[Any]:
        raise NotImplementedError

    async def wait_lost(self, timeout: float | None = None) -> bool:
        """Wait until the lease is lost (true) or ``timeout`` seconds pass (false)."""
        try:
            async with asyncio.timeout(timeout):
                await self._lost_event.wait()
        except TimeoutError:
            return False
        self._reported = True
        return True

    # entering and leaving -------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError("a lease handle can be entered only once")
        host = asyncio.current_task()
        if host is None:
            raise RuntimeError(f"{type(self).__name__} must be entered from an asyncio task")
        self._entered = True
        lease, sent = await self._acquire()
        # No await from here on: the heartbeat must not cancel the task before it is in the block.
        self._state.start(lease, sent)
        self._host = host
        self._cancelling = host.cancelling()
        self._beater = asyncio.create_task(self._beat(), name=f"tenure-heartbeat {self.key}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._exiting = True  # from here on the heartbeat never cancels the task
        convert = False
        if self._cancelled_host and self._host is not None:
            self._cancelled_host = False
            # Like asyncio.timeout: only our own cancellation becomes LeaseLost; if someone else
            # cancelled the task too, the CancelledError goes on.
            if self._host.uncancel() <= self._cancelling and isinstance(
                exc, asyncio.CancelledError
            ):
                convert = True
        await self._stop_heartbeat()
        if self._should_release():
            await self._release_quietly()
        if convert:
            self._reported = True
            raise self._state.lost_error() from exc
        self._outcome(exc)

    async def _stop_heartbeat(self) -> None:
        self._exiting = True
        beater, self._beater = self._beater, None
        if beater is not None and beater is not asyncio.current_task():
            beater.cancel()
            await asyncio.wait([beater])
        self._state.stop(time.monotonic())

    async def _release_quietly(self) -> None:
        lease = self._state.lease
        self._released = True
        if lease is not None:
            await self._quiet_release(lease.token)

    async def _quiet_release(self, token: int) -> None:
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT_S * RELEASE_RETRY.attempts):
                await self._client._timed(
                    self._release_call(token),
                    retry=RELEASE_RETRY,
                    timeout=min(self._client.timeout, RELEASE_TIMEOUT_S),
                )
        except NotHolder as exc:  # lost and taken by someone else: nothing of ours to release
            log.debug("tenure: %r (token %s) was no longer ours: %s", self.key, token, exc)
        except Exception as exc:
            log.warning("tenure: could not release %r (token %s): %s", self.key, token, exc)

    # the heartbeat --------------------------------------------------------------------------
    async def _beat(self) -> None:
        state = self._state
        failures, retry_at = 0, 0.0
        while True:
            now = time.monotonic()
            if state.lost(now):
                break
            due = state.next_renewal() if failures == 0 else retry_at
            if now < due:
                await asyncio.sleep(min(due, state.deadline) - now)
                continue
            async with self._beat_lock:
                if self._finished:
                    return
                call = self._renew_call(self._held().token)
                sent = time.monotonic()
                limit = max(0.001, state.deadline - sent)
                try:
                    async with asyncio.timeout(limit):  # a try never outlives the deadline
                        reply = await self._client._send_once(
                            call, min(self._client.timeout, limit)
                        )
                    renewed = sh.interpret(call, reply)
                except TenureError as err:
                    if sh.is_loss(err):
                        state.mark(sh.loss_reason(err), err)
                        break
                    error: BaseException = err
                except Exception as err:  # TimeoutError at the deadline, or an odd failure
                    log.debug("tenure: renewal of %r failed", self.key, exc_info=True)
                    error = err
                else:
                    if state.accept(renewed, sent, time.monotonic()):
                        failures = 0
                        continue
                    break
            failures += 1
            state.error = error
            retry_at = time.monotonic() + state.backoff(failures)
        self._lost()

    def _lost(self) -> None:
        if self._state.reason is None:
            return
        self._lost_event.set()
        if self._exiting:
            return
        log.warning("tenure: %s", self._state.lost_error().detail)
        if self._host is not None and not self._host.done() and not self._spare_host:
            self._cancelled_host = True
            self._host.cancel(f"tenure: the lease on {self.key!r} was lost")
        if self._on_lost is not None:
            self._reported = True
            try:
                result = self._on_lost(self)
            except Exception:
                log.exception("tenure: the on_lost callback of %r failed", self.key)
                return
            if inspect.isawaitable(result):
                future = asyncio.ensure_future(result)
                self._callbacks.add(future)
                future.add_done_callback(self._callback_done)

    def _callback_done(self, future: asyncio.Future[Any]) -> None:
        self._callbacks.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error(
                "tenure: the on_lost callback of %r failed",
                self.key,
                exc_info=future.exception(),
            )


class AsyncLeaseHandle(_AsyncHeld):
    """A lease held by an :class:`~tenure.client.AsyncClient` with a heartbeat task.

    Use it as an async context manager (``async with client.lease(...) as lease``). When the
    lease is lost, the task that entered the block is cancelled and leaving the block raises
    :class:`~tenure.LeaseLost`. The block must not block the event loop (the heartbeat runs on
    it).
    """

    def __init__(
        self,
        client: AsyncClient,
        key: str,
        ttl: float = 30.0,
        task: str | None = None,
        meta: dict[str, Any] | None = None,
        wait: float | None = None,
        on_lost: Callable[[AsyncLeaseHandle], object] | None = None,
    ) -> None:
        super().__init__(client, key, ttl, task, meta, wait, on_lost)

    async def release(self) -> ReleaseResult:
        """Stop the heartbeat and release the lease now (errors raise, unlike on exit)."""
        self._held()
        await self._stop_heartbeat()
        result = await self._client.release(self.key, self.token)
        self._released = True
        return result

    def _renew_call(self, token: int) -> Call[Lease]:
        return sh.renew(self.key, token)

    def _release_call(self, token: int) -> Call[Any]:
        return sh.release(self.key, token)

    async def _acquire(self) -> tuple[Lease, float]:
        give_up = time.monotonic() + (self.wait or 0)
        ttl_ms = max(1, round(self.ttl * 1000))
        while True:
            call = sh.acquire(
                self.key, ttl_ms, self.task, self.meta, self._wait_ms(give_up), self._client.session
            )
            try:
                lease, sent = await self._client._timed(call)
            except LeaseHeld:
                left = give_up - time.monotonic()
                if self.wait is None or left <= 0:
                    raise
                await asyncio.sleep(min(CHUNK_PAUSE_S, left))
                continue
            if not self._confirm_needed(sent):
                return lease, sent
            try:
                return await self._client._timed(sh.renew(self.key, lease.token))
            except BaseException:
                await self._quiet_release(lease.token)
                raise
