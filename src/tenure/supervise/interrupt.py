"""SIGTERM and SIGHUP while the CLI waits for a lease (``lock acquire --wait``, ``run --wait``).

By default they end Python on the spot. During a wait they end the command the way Ctrl-C does
instead, by an exception (exit ``128+N``): on its way out the client closes the connection (the
server withdraws the waiting acquisition) and releases a grant that raced the signal, so an
interrupted wait leaves nothing held.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOPS = (signal.SIGTERM, signal.SIGHUP)


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def raising(
    signals: tuple[signal.Signals, ...], handler: Callable[[int, FrameType | None], None]
) -> Iterator[None]:
    """While the block runs, ``signals`` call ``handler`` (which raises); the previous handlers
    come back after it. Off the main thread (where signals cannot be handled) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)


@contextmanager
def interruptible() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise ``SystemExit(128+N)``."""
    with raising(STOPS, _stop):
        yield
