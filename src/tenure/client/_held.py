"""The heartbeat of a handle held by a :class:`~tenure.client.Client`: a thread.

:class:`_SyncHeld` enters (acquires), renews in a background thread and leaves (releases);
subclasses say how to acquire, renew and release. The asyncio twin is
:mod:`tenure.client._held_aio`; what both know is :mod:`tenure.client._lease_state`.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol, Self, TypeVar

from tenure.client import _wire as sh
from tenure.client._call import Call, Reply
from tenure.client._lease_state import (
    JOIN_TIMEOUT_S,
    RELEASE_RETRY,
    RELEASE_TIMEOUT_S,
    _Beat,
    _Handle,
    log,
)
from tenure.client._transport import RetryPolicy
from tenure.core.models import Lease, ReleaseResult
from tenure.errors import TenureError

T = TypeVar("T")


class Caller(Protocol):
    """What a handle needs of its :class:`~tenure.client.Client`."""

    timeout: float
    session: str

    def _send_once(self, call: Call[Any], timeout: float | None = None) -> Reply: ...

    def _timed(
        self, call: Call[T], *, retry: RetryPolicy | None = None, timeout: float | None = None
    ) -> tuple[T, float]: ...

    def _call(self, call: Call[T]) -> T: ...

    def _granted(self, call: Call[Lease], key: str) -> tuple[Lease, float]: ...

    def release(self, key: str, token: int | None = None) -> ReleaseResult: ...


class _SyncHeld(_Handle[Caller]):
    """The machinery of a handle held by a :class:`~tenure.client.Client`: entering, the
    heartbeat thread, leaving. Subclasses say how to acquire, renew and release (the hooks
    ``_acquire``, ``_renew_call`` and ``_release_call``)."""

    def _init_heartbeat(self) -> None:
        self._stop = threading.Event()
        self._lost_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._beat_lock = threading.Lock()  # held around each renewal (see _finished)

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

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
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
        except Exception as exc:
            self._release_failed(token, exc)

    # the heartbeat --------------------------------------------------------------------------
    def _beat(self) -> None:
        beat = _Beat(self._state)
        while not self._stop.is_set():
            pause = beat.pause(time.monotonic())
            if pause is None:
                break
            if pause > 0:
                self._stop.wait(pause)
                continue
            with self._beat_lock:
                if self._finished:
                    return
                call = self._renew_call(self._held().token)
                sent = time.monotonic()
                try:
                    reply = self._client._send_once(call, beat.timeout(sent, self._client.timeout))
                    outcome: Lease | Exception = sh.interpret(call, reply)
                except Exception as err:
                    outcome = err
                if self._stop.is_set() and isinstance(outcome, Lease | TenureError):
                    return  # leaving: the answer no longer matters
                if not beat.took(outcome, sent, self.key):
                    break
        self._lost()

    def _lost(self) -> None:
        if self._state.reason is None:
            return
        self._lost_event.set()
        log.warning("tenure: %s", self._state.lost_error().detail)
        self._run_on_lost()
