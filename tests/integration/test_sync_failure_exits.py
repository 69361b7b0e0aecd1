"""A sync that fails ends the server: it exits non-zero and acknowledges nothing it covered.

The failure is real: the WAL file is deleted under the running server, so the next sync of it
(by the syncer process, which opens the WAL by its name) fails. Answering an error and going on
would leave commits readers already saw without any promise that they are on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from procs import ServeAt, cli

EXIT_CODE = 70  # the documented exit of a server whose storage failed


def test_a_failed_wal_sync_makes_the_server_exit_without_acknowledging(tmp_path: Path) -> None:
    path = tmp_path / "tenure.db"
    db = f"sqlite:///{path}"
    root = cli("principal", "add", "root", "--role", "admin", "--db", db).stdout.strip()
    server = ServeAt(db)
    try:
        with server.http(root) as http:
            assert http.post("/v1/leases/acquire", json={"key": "before"}).status_code == 200
            os.unlink(f"{path}-wal")  # the storage fails: the next sync of the WAL cannot happen
            try:
                reply = http.post("/v1/leases/acquire", json={"key": "after"})
            except httpx.TransportError:
                reply = None  # the connection closed unanswered: nothing acknowledged
            assert reply is None, reply.text
        assert server.proc.wait(timeout=30) == EXIT_CODE
        assert "durability lost: the sync of" in server.stderr()
    finally:
        server.kill()
