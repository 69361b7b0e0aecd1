"""Another process holding SQLite's write lock does not stall a server.

A group of writes that cannot begin at once (``BEGIN IMMEDIATE`` meets another process's lock)
waits for the lock in the committer thread, not on the event loop: meanwhile the server answers
its health check and reads, and the write goes through once the lock is free.
"""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from procs import Serve, cli


def test_a_write_waiting_for_another_process_lock_leaves_the_server_serving(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tenure.db"
    db = f"sqlite:///{path}"
    root = cli("principal", "add", "root", "--role", "admin", "--db", db).stdout.strip()
    serve = Serve(db)
    other = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        with serve.http(root) as http, ThreadPoolExecutor(1) as pool:
            assert http.post("/v1/leases/acquire", json={"key": "before"}).status_code == 200
            other.execute("BEGIN IMMEDIATE")  # another process takes the write lock
            waiting = pool.submit(http.post, "/v1/leases/acquire", json={"key": "k"})
            time.sleep(0.5)  # (ordering only: the write reaches the server first)
            with serve.http(root) as probe:  # the busy timeout is 30 s; this waits 10 at most
                probe.timeout = 10
                assert probe.get("/healthz").status_code == 200
                held = probe.get("/v1/leases/before")
                assert held.status_code == 200 and held.json()["lease"]["holder"] == "root"
            assert not waiting.done()  # the write still waits: the lock is still held
            other.execute("ROLLBACK")  # the lock is free: the write goes through
            reply = waiting.result(timeout=30)
            assert reply.status_code == 200, reply.text
            assert http.get("/v1/leases/k").json()["lease"]["holder"] == "root"
    finally:
        other.close()
        serve.kill()
