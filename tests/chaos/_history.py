"""Helpers of the history chaos tests: principals, worker processes, the server's state."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

import tenure
from tenure.service.principals import Principals

WORKER = Path(__file__).with_name("_history_worker.py")


def tokens_for(db: str, *names: str, roles: tuple[str, ...] = ()) -> dict[str, str]:
    """Bearer tokens of new principals, made on the database directly."""
    store = tenure.open_store(db)
    try:
        return {n: Principals(store).bootstrap(n, "agent", roles).token for n in names}
    finally:
        store.close()


class Worker:
    """``_history_worker.py VERB URL TOKEN NAME LOG ...`` whose stdout lines a thread collects."""

    def __init__(self, verb: str, url: str, token: str, name: str, log: Path, *args: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), verb, url, token, name, str(log), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix: str, timeout: float = 30) -> str:
        """The next line starting with ``prefix`` (fails if the worker dies first)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{self.name}: no {prefix!r} in {timeout} s") from None
            if line is None:
                raise AssertionError(f"{self.name} exited {self.proc.wait()}: {self.stderr()}")
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return ""
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-3000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def all_events(http: httpx.Client, **filters: Any) -> list[dict[str, Any]]:
    """The server's whole event log (or the events matching ``filters``), oldest first."""
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        resp = http.get("/v1/events", params={"after": after, "limit": 1000, **filters})
        assert resp.status_code == 200, resp.text
        page = resp.json()
        out.extend(page["events"])
        if len(page["events"]) < 1000:
            return out
        after = page["next"]


def registers(http: httpx.Client, keys: list[str]) -> dict[str, Any]:
    """The fenced register of each key (``None`` where the server has no value)."""
    out: dict[str, Any] = {}
    for key in keys:
        resp = http.get(f"/v1/fenced/{key}")
        assert resp.status_code in (200, 404), resp.text
        out[key] = resp.json() if resp.status_code == 200 else None
    return out
