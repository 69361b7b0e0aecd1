"""Fences that own their storage, for checks made outside your own transaction (the ASGI
middleware): in memory for one process, or a :class:`TableFence` over connections you open."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import warnings
from collections.abc import Callable
from typing import Any, Protocol

from tenure.core.subtree import ancestors
from tenure.fence._args import KeyPatterns, check_bound, check_key, check_token, key_patterns, stale
from tenure.fence.table import TableFence, dialect_of

log = logging.getLogger("tenure.fence")


class KeyFence(Protocol):
    """Admits a token for a key if it is the largest seen for the key and for every subtree
    above it (``a/`` and ``a/b/`` above ``a/b/c``), else raises ``StaleToken``."""

    blocking: bool

    def admit(self, key: str, token: int) -> int: ...

    def current(self, key: str) -> int | None: ...


class MemoryFence:
    """The largest token per key in this process's memory (thread-safe). Good for a single
    process and for tests; it forgets everything on restart, so a restarted process admits
    the first token it sees again. Use :class:`ConnectedFence` when that matters."""

    blocking = False

    def __init__(self, *, keys: KeyPatterns = None) -> None:
        self.keys = key_patterns(keys)
        self._tokens: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, key: str, token: int) -> int:
        key, token = check_bound(self.keys, check_key(key)), check_token(token)
        with self._lock:
            seen = [self._tokens.get(k) for k in (key, *ancestors(key))]
            current = max((t for t in seen if t is not None), default=None)
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
    the same database. ``keys`` binds it to the keys its guards use (see :class:`TableFence`)."""

    blocking = True

    def __init__(
        self,
        connect: Callable[[], Any],
        table: TableFence | None = None,
        *,
        keys: KeyPatterns = None,
    ) -> None:
        self.connect = connect
        self.table = table or TableFence(keys=keys)
        if keys is not None and table is not None:
            self.table = TableFence(table.table, keys=keys)

    def install(self) -> None:
        """Create the fence table if it is missing."""
        self._run(self.table.install)

    def admit(self, key: str, token: int) -> int:
        admitted: int = self._run(lambda conn: self.table.admit(conn, key, token))
        return admitted

    def current(self, key: str) -> int | None:
        found: int | None = self._run(lambda conn: self.table.current(conn, key))
        return found

    def reset(self, key: str | None = None) -> int:
        """Forget ``key``'s token (every key's with ``None``); the number of keys forgotten.
        For a fence that outlived a reset or a move of tenure's database."""
        only = None if key is None else check_key(key)
        forgot: int = self._run(lambda conn: reset_table(conn, self.table.table, only))
        return forgot

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


def reset_table(conn: Any, table: str, key: str | None) -> int:
    """Delete ``key``'s row (every row with ``None``) of the fence table ``table``."""
    if key is None:
        return int(conn.execute(f"DELETE FROM {table}").rowcount)
    mark = "%s" if dialect_of(conn) == "postgres" else "?"
    return int(conn.execute(f"DELETE FROM {table} WHERE key = {mark}", (key,)).rowcount)


class SqliteFence(ConnectedFence):
    """A :class:`ConnectedFence` on a SQLite file, its table created on first use (one
    machine's processes share it; replicas on several machines need a shared database)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        table: TableFence | None = None,
        *,
        keys: KeyPatterns = None,
    ) -> None:
        self.path = os.fspath(path)
        super().__init__(self._connect, table, keys=keys)
        self._installed = False

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30)
        if not self._installed:
            with conn:
                self.table.install(conn)
            self._installed = True
        return conn

    def __repr__(self) -> str:
        return f"<SqliteFence {self.path!r}>"


def warn_if_memory(fence: object) -> None:
    """Say loudly that an in-memory fence forgets on restart and is per process."""
    if isinstance(fence, MemoryFence):
        text = (
            "tenure.fence: this guard uses a MemoryFence, which forgets every token on restart "
            "and is not shared between worker processes: a stale holder's write can land after "
            "a restart or on another worker. Use a persistent fence (SqliteFence, "
            "ConnectedFence, RedisFence) outside tests."
        )
        log.warning(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)
