"""The heartbeat of a handle held by an :class:`~tenure.client.AsyncClient`: an asyncio task.

:class:`_AsyncHeld` enters (acquires), renews in a task, cancels the block on a loss and leaves
(releases); subclasses say how to acquire, renew and release. The thread twin is
:mod:`tenure.client._held`; what both know is :mod:`tenure.client._lease_state`.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Protocol, Self, TypeVar

from tenure.client import _wire as sh
from tenure.client._call import Call, Reply
from tenure.client._lease_state import RELEASE_RETRY, RELEASE_TIMEOUT_S, _Beat, _Handle, log
from tenure.client._transport import RetryPolicy
from tenure.core.models import Lease, ReleaseResult

T = TypeVar("T")


class AsyncCaller(Protocol):
    """What a handle needs of its :class:`~tenure.client.AsyncClient`."""

    timeout: float
    session: str

    async def _send_once(self, call: Call[Any], timeout: float | None = None) -> Reply: ...

    async def _timed(
        self, call: Call[T], *, retry: RetryPolicy | None = None, timeout: float | None = None
    ) -> tuple[T, float]: ...

    async def _call(self, call: Call[T]) -> T: ...

    async def _granted(self, call: Call[Lease], key: str) -> tuple[Lease, float]: ...

    async def release(self, key: str, token: int | None = None) -> ReleaseResult: ...


class _AsyncHeld(_Handle[AsyncCaller]):
    """The machinery of a handle held by an :class:`~tenure.client.AsyncClient`: entering, the
    heartbeat task, cancelling the block on a loss, leaving. Subclasses say how to acquire,
    renew and release (``_acquire``, ``_renew_call``, ``_release_call``)."""

    def _init_heartbeat(self) -> None:
        self._lost_event = asyncio.Event()
        self._beater: asyncio.Task[None] | None = None
        self._host: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self._cancelled_host = False
        self._exiting = False
        self._callbacks: set[asyncio.Future[Any]] = set()
        self._beat_lock = asyncio.Lock()  # held around each renewal (see _finished)

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

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
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
        except Exception as exc:
            self._release_failed(token, exc)

    # the heartbeat --------------------------------------------------------------------------
    async def _beat(self) -> None:
        beat = _Beat(self._state)
        while (pause := beat.pause(time.monotonic())) is not None:
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            async with self._beat_lock:
                if self._finished:
                    return
                call = self._renew_call(self._held().token)
                sent = time.monotonic()
                timeout = beat.timeout(sent, self._client.timeout)
                try:
                    async with asyncio.timeout(timeout):  # a try never outlives the deadline
                        reply = await self._client._send_once(call, timeout)
                    outcome: Lease | Exception = sh.interpret(call, reply)
                except Exception as err:  # TimeoutError at the deadline, a refusal, a failure
                    outcome = err
                if not beat.took(outcome, sent, self.key):
                    break
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
        result = self._run_on_lost()
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
