"""``tenure serve`` and ``tenure principal add`` as real processes (SPEC §6).

The server stops gracefully on SIGTERM: long-polls return at once instead of at the end of their
wait, requests in flight finish, and the process exits 0.
"""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import tenure
from procs import Serve, cli


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'tenure.db'}"


@pytest.fixture
def server(db: str) -> Iterator[Serve]:
    cli("principal", "add", "root", "--role", "admin", "--db", db)
    serve = Serve(db)
    try:
        yield serve
    finally:
        serve.kill()


def test_principal_add_prints_a_token_that_works(db: str) -> None:
    root = cli("principal", "add", "root", "--role", "admin", "--db", db).stdout.strip()
    assert root.startswith("tnr_") and "\n" not in root
    as_json = json.loads(
        cli(
            "principal", "add", "jo", "--kind", "agent", "--parent", "root", "--json", "--db", db
        ).stdout
    )
    assert as_json["principal"] == {"name": "jo", "kind": "agent", "roles": [], "parent": "root"}
    again = cli("principal", "add", "jo", "--db", db).stdout.strip()
    assert again != as_json["token"]
    orphan = cli("principal", "add", "kid", "--parent", "nobody", "--db", db, check=False)
    assert orphan.returncode == 5 and orphan.stdout == ""
    assert orphan.stderr == "tenure: not found: parent: no principal named 'nobody'\n"

    serve = Serve(db)
    try:
        with serve.http(root) as client:
            me = client.get("/v1/me").json()["principal"]
            assert me == {"name": "root", "kind": "human", "roles": ["admin"], "parent": None}
        for token in (as_json["token"], again):
            with serve.http(token) as client:
                assert client.get("/v1/me").json()["principal"]["name"] == "jo"
                assert client.post("/v1/leases/acquire", json={"key": "k"}).status_code == 200
    finally:
        code, err = serve.stop()
    assert code == 0, err


def test_sigterm_ends_long_polls_lets_requests_finish_and_exits_0(server: Serve, db: str) -> None:
    alice = cli("principal", "add", "alice", "--db", db).stdout.strip()
    bob = cli("principal", "add", "bob", "--db", db).stdout.strip()
    with server.http(alice) as client:
        lease = client.post("/v1/leases/acquire", json={"key": "k", "ttl_ms": 60_000}).json()
    token = lease["lease"]["token"]

    def long_poll() -> tuple[int, dict[str, object], float]:
        with server.http(bob) as client:
            resp = client.post("/v1/leases/acquire", json={"key": "k", "wait_ms": 60_000})
            return resp.status_code, resp.json(), time.monotonic()

    def slow_write() -> tuple[int, dict[str, object]]:
        """A request whose body is still arriving when the signal comes."""
        body = json.dumps({"key": "k", "token": token, "value": "written during shutdown"})
        half = len(body) // 2

        def chunks() -> Iterator[bytes]:
            yield body[:half].encode()
            time.sleep(1.0)
            yield body[half:].encode()

        with server.http(alice) as client:
            resp = client.post(
                "/v1/fenced/write", content=chunks(), headers={"content-type": "application/json"}
            )
            return resp.status_code, resp.json()

    with ThreadPoolExecutor(2) as pool:
        polling = pool.submit(long_poll)
        time.sleep(0.3)
        writing = pool.submit(slow_write)
        time.sleep(0.3)  # the long-poll is queued and the write is half sent
        assert not polling.done() and not writing.done()
        signalled = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)

        status, body, returned = polling.result(30)
        assert status == 409 and body["code"] == "lease_held", body
        assert body["holder"] == "alice"
        assert returned - signalled < 2.0, returned - signalled  # not at the end of its 60 s

        wrote, result = writing.result(30)
        assert wrote == 200, result
        assert result["value"] == "written during shutdown"

    _, err = server.proc.communicate(timeout=30)
    assert server.proc.returncode == 0, err
    assert time.monotonic() - signalled < 10
    store = tenure.open_store(db)
    try:
        value = store.read_register("k")
        assert value is not None and value.value == "written during shutdown"
    finally:
        store.close()


def test_an_idle_server_exits_0_on_sigterm_and_refuses_new_connections(server: Serve) -> None:
    code, err = server.stop()
    assert code == 0, err
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/healthz", timeout=2)


def test_serve_exits_non_zero_when_it_cannot_bind(db: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = cli("serve", "--db", db, "--port", str(port), check=False)
    assert out.returncode != 0
