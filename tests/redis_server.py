"""A private ``redis-server`` for tests: its own directory, a free loopback port, stopped after.

Debian's ``redis-server`` package provides the binary (``./dev test`` installs it when it is
missing). The server is never found already running or shared: each one is started here.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from procs import free_port

BINARY = "redis-server"


class RedisServer:
    """``redis-server`` on 127.0.0.1 and a free port, with no persistence, in its own dir."""

    def __init__(self) -> None:
        binary = shutil.which(BINARY) or "/usr/bin/redis-server"
        if not Path(binary).exists():
            pytest.fail("redis-server is missing: install Debian's redis-server (./dev test does)")
        self.dir = Path(tempfile.mkdtemp(prefix="tenure-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while True:
            try:
                if self.client().ping():
                    return
            except redis.ConnectionError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("redis-server did not start")
            time.sleep(0.02)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
