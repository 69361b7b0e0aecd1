"""Fences that own their storage, for checks made outside your own transaction (the ASGI
middleware): in memory for one process, or a :class:`TableFence` over connections you open."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from tenure.fence._args import check_key, check_token
from tenure.fence.table import TableFence, stale


class KeyFence(Protocol):
    """Admits a token for a key if it is the largest seen, else raises ``StaleToken``."""

    blocking: bool

    def admit(self, key: str, token: int) -> int: ...

    def current(self, key: str) -> int | None: ...


class MemoryFence:
    """The largest token per key in this process's memory (thread-safe). Good for a single
    process and for tests; it forgets everything on restart, so a restarted process admits
    the first token it sees again. Use :class:`ConnectedFence` when that matters."""

    blocking = False

    def __init__(self) -> None:
        self._tokens: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, key: str, token: int) -> int:
        key, token = check_key(key), check_token(token)
        with self._lock:
            current = self._tokens.get(key)
            if current is not None and token < current:
                raise stale(key, token, current)
            self._tokens[key] = token
        return token

    def current(self, key: str) -> int | None:
        with self._lock:
            return self._tokens.get(check_key(key))


class ConnectedFence:
    """A :class:`TableFence` that opens a connection per check with ``connect()``, admits in
    its own transaction, commits and closes. Durable and shared by every process that uses
    the same database."""

    blocking = True

    def __init__(self, connect: Callable[[], Any], table: TableFence | None = None) -> None:
        self.connect = connect
        self.table = table or TableFence()

    def install(self) -> None:
        """Create the fence table if it is missing."""
        self._run(self.table.install)

    def admit(self, key: str, token: int) -> int:
        admitted: int = self._run(lambda conn: self.table.admit(conn, key, token))
        return admitted

    def current(self, key: str) -> int | None:
        found: int | None = self._run(lambda conn: self.table.current(conn, key))
        return found

    def _run(self, work: Callable[[Any], Any]) -> Any:
        conn = self.connect()
        try:
            result = work(conn)
            conn.commit()
            return result
        except BaseException:
            conn.rollback()
            raise
        finally:
            conn.close()
