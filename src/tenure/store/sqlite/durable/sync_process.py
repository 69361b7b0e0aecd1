"""The event loop's end of the WAL syncer process (:mod:`tenure.store.sqlite.durable.sync_helper`).

:class:`SyncProcess` starts the helper, writes a group number to its stdin for each sync
wanted, and hands each answer (the last number a sync covered, and whether it succeeded) to a
callback on the loop. If the helper goes away (killed, crashed), ``lost`` is called once and
the caller syncs another way; nothing it was asked stays unanswered without ``lost``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tenure.store.sqlite.durable import sync_helper as syncd

log = logging.getLogger("tenure.server")
REPLY = 1 + syncd.REQUEST  # bytes of an answer: a status and a group number
#: what an answer is handed to: the last group number the sync covered, and whether it succeeded
Synced = Callable[[int, bool], None]


class SyncProcess:
    """A running :mod:`tenure.store.sqlite.durable.sync_helper` for the WAL file ``wal``."""

    def __init__(self, wal: Path) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", syncd.__file__, str(wal)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._out, self._in = self._proc.stdin.fileno(), self._proc.stdout.fileno()
        os.set_blocking(self._out, False)
        os.set_blocking(self._in, False)
        self._buffer = b""
        self._unsent: int | None = None  # a request the pipe had no room for yet
        self._loop: asyncio.AbstractEventLoop | None = None
        self._synced: Synced | None = None
        self._lost: Callable[[], None] | None = None

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def attached(self) -> bool:
        """Whether :meth:`attach` was called."""
        return self._loop is not None

    def attach(
        self, loop: asyncio.AbstractEventLoop, synced: Synced, lost: Callable[[], None]
    ) -> None:
        """On ``loop``: answers go to ``synced``; ``lost()`` once if the helper goes away."""
        self._loop, self._synced, self._lost = loop, synced, lost
        loop.add_reader(self._in, self._readable)

    def request(self, number: int) -> None:
        """On the loop: sync every commit written so far; the answer will carry ``number``."""
        if self._unsent is not None:  # the pipe is full: the newest request replaces it
            self._unsent = number
            return
        try:
            os.write(self._out, number.to_bytes(syncd.REQUEST, "big"))
        except BlockingIOError:  # the helper is behind (stopped?): send it when there is room
            assert self._loop is not None
            self._unsent = number
            self._loop.add_writer(self._out, self._writable)
        except OSError:  # it is gone: its end of file (or its exit) reaches _readable
            pass

    def close(self) -> None:
        """Close its stdin (it exits) and wait for it; from any thread, once no sync is
        wanted any more."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        if self._loop is None and self._proc.stdout is not None:  # else: its reader closes it
            self._proc.stdout.close()

    def _writable(self) -> None:
        assert self._loop is not None and self._unsent is not None
        number, self._unsent = self._unsent, None
        self._loop.remove_writer(self._out)
        self.request(number)

    def _readable(self) -> None:
        try:
            data = os.read(self._in, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._gone()
            return
        self._buffer += data
        whole = len(self._buffer) - len(self._buffer) % REPLY
        answers, self._buffer = self._buffer[:whole], self._buffer[whole:]
        assert self._synced is not None
        for at in range(0, whole, REPLY):
            ok = answers[at : at + 1] == syncd.SYNCED
            self._synced(int.from_bytes(answers[at + 1 : at + REPLY], "big"), ok)

    def _gone(self) -> None:
        assert self._loop is not None and self._proc.stdout is not None
        self._loop.remove_reader(self._in)
        self._proc.stdout.close()
        if self._unsent is not None:
            self._loop.remove_writer(self._out)
            self._unsent = None
        lost, self._lost = self._lost, None
        if lost is not None:
            lost()
