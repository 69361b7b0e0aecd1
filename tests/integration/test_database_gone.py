"""A SQLite database that is gone: ``503`` at once, ``/readyz`` says not ready, the client names it.

The directory of a running server's database is removed. SQLite's open connections would go
on reading and writing the deleted file (nobody would ever read those writes again); instead
every call is answered ``503 unavailable`` within about a second, naming the file, ``/readyz``
is ``503`` (without naming it: anyone may ask), ``/healthz`` (liveness) stays ``200``, and
the client raises :class:`tenure.errors.Unavailable` whose message names the database problem.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
import pytest

import tenure
from procs import ServeAt, cli
from tenure.client import RetryPolicy
from tenure.errors import Unavailable


def test_a_removed_database_is_503_at_once_and_not_ready(tmp_path: Path) -> None:
    path = tmp_path / "data" / "tenure.db"
    db = f"sqlite:///{path}"
    root = cli("principal", "add", "root", "--role", "admin", "--db", db).stdout.strip()
    server = ServeAt(db)
    try:
        with server.http(root) as http:
            assert http.post("/v1/leases/acquire", json={"key": "before"}).status_code == 200
            assert http.get("/readyz").status_code == 200
            shutil.rmtree(path.parent)
            gone = time.monotonic()
            write = _until_503(http, "post", "/v1/leases/acquire", json={"key": "after"})
            read = _until_503(http, "get", "/v1/leases/before")
            took = time.monotonic() - gone
            assert took < 3.0, took  # at once, not after a client's timeout
            for resp in (write, read):
                problem = resp.json()
                assert problem["code"] == "unavailable" and resp.headers["retry-after"] == "1"
                assert str(path) in problem["detail"], problem
            ready = http.get("/readyz")
            # Anyone may ask /readyz: it does not name the file (the authenticated 503 does)
            assert ready.status_code == 503, ready.text
            assert str(path) not in ready.text and "log" in ready.json()["detail"]
            assert http.get("/healthz").status_code == 200  # alive: liveness is not readiness
        quick = RetryPolicy(attempts=2, budget=2.0)
        with (
            tenure.Client(server.url, token=root, retry=quick, timeout=5) as client,
            pytest.raises(Unavailable) as raised,
        ):
            client.acquire("again")
        assert str(path) in str(raised.value) and "cannot be reached" in str(raised.value)
    except BaseException:
        print(server.stderr())
        raise
    finally:
        server.kill()


def _until_503(http: httpx.Client, method: str, url: str, **kwargs: object) -> httpx.Response:
    """The first ``503``, asking again while the server still answers otherwise (for at most
    ten seconds: the check runs every half second)."""
    deadline = time.monotonic() + 10
    while True:
        resp = http.request(method, url, timeout=5, **kwargs)  # type: ignore[arg-type]
        if resp.status_code == 503 or time.monotonic() > deadline:
            assert resp.status_code == 503, resp.text
            return resp
        time.sleep(0.05)
