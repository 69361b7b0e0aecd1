"""Cross-server wake-ups on PostgreSQL: LISTEN/NOTIFY.

Every transaction that appends events also sends one ``NOTIFY tenure`` whose payload has a line
``e`` (the event log grew) and a line ``k:<key>`` for each key it freed (a lease released,
force-released or expired): one notification per transaction, a group's included, however many
keys it freed (more only past PostgreSQL's 8,000-byte limit). The notices are sent right after
the transaction's ``COMMIT``, in the same round trip, in a transaction of their own that does
not wait for the disk (:meth:`tenure.store.postgres.tx.Batch.commit`): PostgreSQL serializes
the commits of every transaction that notifies, cluster-wide, until each is flushed, which
would make the commits of every server queue behind each other. So they are never sent for a
rollback, and a listener reads the change they announce. Each server runs one
:class:`Listener` on its own connection that rings its event bell (long-polls of
``/v1/events``, SSE followers) and wakes the long-poll waiters of a freed key, so waiters on
any server are woken by changes made on any other.

A lost connection is re-opened with backoff; while it is down, followers fall back to reading
the log every second and waiters to the holder's deadline, so nothing is missed, only later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import psycopg

from tenure.core.models import EventDraft

log = logging.getLogger(__name__)
CHANNEL = "tenure"
FREEING = ("released", "force_released", "expired")
MAX_PAYLOAD = 7900  # PostgreSQL's limit is 8000 bytes


def notices(events: Sequence[EventDraft]) -> list[str]:
    """The payloads to send for ``events`` committed together: one line ``e`` and one line
    ``k:<key>`` for each key freed, in as few payloads as PostgreSQL's size limit allows (one,
    but for thousands of keys). A key cannot hold a newline (keys refuse control characters)."""
    if not events:
        return []
    lines = dict.fromkeys(
        f"k:{e.key}" for e in events if e.type in FREEING and e.key and "\n" not in e.key
    )
    payloads: list[str] = []
    current, size = ["e"], 1
    for line in lines:
        n = len(line.encode()) + 1
        if n > MAX_PAYLOAD:
            continue  # its waiters wake at the holder's deadline instead
        if size + n > MAX_PAYLOAD:
            payloads.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += n
    payloads.append("\n".join(current))
    return payloads


class Listener:
    """A daemon thread that LISTENs on ``url`` and dispatches notifications."""

    def __init__(
        self, url: str, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> None:
        self.url, self.on_events, self.on_free = url, on_events, on_free
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tenure-listen", daemon=True)

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        pause = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self.url, autocommit=True, connect_timeout=5, client_encoding="UTF8"
                ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.connected.set()
                    pause = 0.1
                    self.on_events()  # whatever happened while not listening
                    while not self._stop.is_set():
                        # a short timeout: stop() returns within it (a server restarts fast)
                        for notice in conn.notifies(timeout=0.1):
                            self._dispatch(notice.payload)
            except Exception:  # re-open; the fallbacks cover the gap
                log.warning("LISTEN connection lost; reconnecting", exc_info=True)
            finally:
                self.connected.clear()
            self._stop.wait(pause)
            pause = min(pause * 2, 5.0)

    def _dispatch(self, payload: str) -> None:
        for line in payload.split("\n"):
            if line == "e":
                self.on_events()
            elif line.startswith("k:"):
                self.on_free(line[2:])
