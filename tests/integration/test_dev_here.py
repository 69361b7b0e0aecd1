"""``./dev serve``, ``./dev tenure`` and ``./dev demo`` run where the user stands: relative paths
(``--db sqlite:///x.db``, the command of ``tenure run``) are theirs, not the checkout's."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import httpx

from procs import free_port

REPO = Path(__file__).resolve().parents[2]


def dev(where: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    return subprocess.run(
        [str(REPO / "dev"), *args],
        cwd=where,
        env={**clean, "HOME": str(where), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_relative_paths_resolve_where_the_user_stands(tmp_path: Path) -> None:
    name = f"here-{uuid.uuid4().hex[:8]}.db"
    try:
        added = dev(tmp_path, "tenure", "principal", "add", "jo", "--db", f"sqlite:///{name}")
        assert added.returncode == 0, added.stderr
        assert (tmp_path / name).exists()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [str(REPO / "dev"), "serve", "--db", f"sqlite:///{name}", "--port", str(port)],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(tmp_path)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).is_success:
                        break
                except httpx.TransportError:
                    pass
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.1)
            script = tmp_path / "job.sh"
            script.write_text("#!/bin/sh\necho ran > ran.txt\n")
            script.chmod(0o755)
            ran = dev(
                tmp_path,
                "tenure",
                "run",
                "jobs/here",
                "--",
                "./job.sh",
                TENURE_URL=url,
                TENURE_TOKEN=added.stdout.strip(),
            )
            assert ran.returncode == 0, ran.stderr
            assert (tmp_path / "ran.txt").read_text() == "ran\n"
        finally:
            server.terminate()
            server.wait(30)
    finally:
        for leftover in REPO.glob(f"{name}*"):  # what the old ./dev made in the checkout
            leftover.unlink()
