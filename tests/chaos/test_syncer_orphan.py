"""The WAL syncer process of ``tenure serve`` (SQLite) goes away with the server by itself:
after a ``kill -9`` of the server (its pipe closes) as after a clean stop, and a server whose
syncer is ``kill -9``ed goes on acknowledging writes (its committer thread syncs)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from procs import Serve, alive, cli, wait_for

pytestmark = pytest.mark.slow


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def syncer_of(server: Serve) -> int:
    (pid,) = wait_for(lambda: children(server.proc.pid), what="the syncer process")
    return pid


def started(db: Path) -> tuple[Serve, str]:
    """A server on ``db`` and the token of a principal of it."""
    token = cli("principal", "add", "jo", "--db", str(db)).stdout.strip()
    return Serve(str(db)), token


def acquire(server: Serve, token: str, key: str) -> int:
    with server.http(token) as http:
        reply = http.post("/v1/leases/acquire", json={"key": key, "ttl_ms": 60_000})
    assert reply.status_code == 200, reply.text
    return int(reply.json()["lease"]["token"])


@pytest.mark.parametrize("how", ["kill -9", "SIGTERM"])
def test_the_syncer_ends_with_the_server(tmp_path: Path, how: str) -> None:
    server, token = started(tmp_path / "t.db")
    try:
        acquire(server, token, "a")
        syncer = syncer_of(server)
        if how == "kill -9":
            server.kill()
        else:
            code, err = server.stop()
            assert code == 0, err
        wait_for(lambda: not alive(syncer), timeout=10, what="the syncer to exit")
    finally:
        server.kill()


def test_a_server_whose_syncer_is_killed_goes_on_acknowledging(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    server, token = started(db)
    try:
        assert acquire(server, token, "a") == 1
        syncer = syncer_of(server)
        os.kill(syncer, signal.SIGKILL)
        assert [acquire(server, token, f"k{i}") for i in range(20)] == [1] * 20
        assert not alive(syncer)  # reaped or a zombie: not started again
    finally:
        server.kill()  # kill -9
    server = Serve(str(db))  # everything acknowledged survived the kill -9 of the server
    try:
        with server.http(token) as http:
            keys = [lease["key"] for lease in http.get("/v1/leases").json()["leases"]]
        assert sorted(keys) == sorted(["a", *[f"k{i}" for i in range(20)]])
    finally:
        server.kill()
