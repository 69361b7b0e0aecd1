"""Servers and HTTP load for bench/growth.py and bench/servers.py.

``tenure serve`` processes on a database (a free 127.0.0.1 port each, stopped by PID), the
shared peer runner's load generator (``../shared/bench-peers/loadgen.py``, workload ``cycle``,
backend ``http`` with the raw client, every client a session of one service token), a
server's resident memory, and plain JSON calls for the few requests the benchmark sends itself.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tenure
from tenure.service.principals import Principals

ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get("TENURE_BENCH_PEERS", ROOT.parent / "shared" / "bench-peers"))
PEERS_PY = Path(os.environ.get("VENV", "/tmp/peers-venv")) / "bin" / "python"
PRINCIPAL = "bench"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bench_token(db: str) -> str:
    """The token of the service principal every client shares (created on ``db``)."""
    store = tenure.open_store(db)
    try:
        return Principals(store).bootstrap(PRINCIPAL, "service").token
    finally:
        store.close()


@dataclass
class Server:
    url: str
    pid: int
    proc: subprocess.Popen[bytes]

    def memory_mb(self) -> dict[str, float]:
        """``VmRSS`` and ``VmHWM`` (the peak) of the server process, in MB."""
        out = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out["rss_mb" if name == "VmRSS" else "hwm_mb"] = int(value.split()[0]) / 1024
        return out

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server process so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def serve(
    db: str, env_extra: dict[str, str] | None = None, launcher: list[str] | None = None
) -> Iterator[Server]:
    """``tenure serve`` on ``db`` with its defaults (no ``TENURE_*`` of this shell), plus
    ``env_extra``, started by ``launcher`` (default ``python -m tenure.cli``: what runs
    ``serve …``); its log goes to a temporary file, shown if it does not start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    env.update(env_extra or {})
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    cmd = [*(launcher or [sys.executable, "-m", "tenure.cli"])]
    cmd += ["serve", "--db", db, "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-2000:].decode(errors="replace")
                    raise SystemExit(f"tenure serve did not start:\n{tail}") from None
                time.sleep(0.1)
        yield Server(url, proc.pid, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def cycle_load(
    servers: list[Server], token: str, clients: int, seconds: float, out: Path, label: str
) -> dict[str, Any]:
    """The runner's ``cycle`` workload (acquire -> renew -> release on each client's own key)
    over ``servers``: one ``loadgen.py`` process per server, all at once, the ``clients`` split
    among them. Returns ops/s (summed), acquire p50/p99 (the worst process), each server's CPU
    share (the runner's ``server_cpu_pct``) and the errors."""
    python = PEERS_PY if PEERS_PY.exists() else Path(sys.executable)
    share = [clients // len(servers) + (i < clients % len(servers)) for i in range(len(servers))]
    procs = []
    for i, (srv, n) in enumerate(zip(servers, share, strict=True)):
        cmd = [str(python), str(PEERS / "loadgen.py"), "run", "--backend", "http"]
        cmd += ["--http-url", srv.url, "--http-token", token, "--http-session", "--http-lib", "raw"]
        cmd += ["--server-pids", str(srv.pid), "--workload", "cycle", "--clients", str(n)]
        cmd += ["--duration", str(seconds), "--label", f"{label}#{i}", "--out", str(out)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    problems = []
    for proc in procs:
        _, err = proc.communicate(timeout=seconds + 300)
        if proc.returncode:
            problems.append(err.decode(errors="replace")[-500:])
    recs = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    mine = [r["metrics"] for r in recs if r["label"].startswith(f"{label}#")]
    if problems or len(mine) != len(servers):
        return {"error": (problems or ["loadgen wrote no result"])[0]}
    return {
        "ops_per_s": sum(m["ops_per_s"] for m in mine),
        "acquire_p50_ms": max(m["lat"]["acquire"]["p50_ms"] for m in mine),
        "acquire_p99_ms": max(m["lat"]["acquire"]["p99_ms"] for m in mine),
        "server_cpu_pct": [m.get("server_cpu_pct") for m in mine],
        "host_busy_pct": mine[0].get("host_busy_pct"),
        "errors": sum(sum(m["errors"].values()) + sum(m["fails"].values()) for m in mine),
    }


def call(
    url: str, token: str, path: str, body: dict[str, Any], timeout: float = 600
) -> tuple[int, bytes]:
    """One ``POST`` on a connection of its own: the status and the raw reply."""
    parts = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(parts[0], int(parts[1]), timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request("POST", path, json.dumps(body).encode(), headers)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()
