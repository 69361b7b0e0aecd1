"""Real ``tenure`` processes for tests: ``tenure serve`` on a free port and the CLI."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    return subprocess.run(
        [sys.executable, "-m", "tenure.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
        env=env,
    )


class Serve:
    """``python -m tenure.cli serve`` on a free port, in its own process."""

    def __init__(self, db: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tenure.cli", "serve", "--db", db, "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tenure serve exited: {self.proc.communicate()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("tenure serve did not come up")
            time.sleep(0.05)

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def stop(self) -> tuple[int, str]:
        """SIGTERM, then the exit code and stderr."""
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)
