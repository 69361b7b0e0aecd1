"""Database outages answer ``503 unavailable`` with ``Retry-After``, never ``500`` (issue 8).

The errors a driver raises while its database cannot be reached are injected into the store of
a real server (the PostgreSQL server itself is stopped and restarted in
``tests/chaos/test_pg_outage.py``); a driver error that is a bug stays a ``500``. The client maps
the code to :class:`tenure.errors.Unavailable` and retries within its budget.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import psycopg
import psycopg_pool
import pytest

import tenure
from tenure.client import RetryPolicy
from tenure.errors import Unavailable

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"

OUTAGES: list[BaseException] = [
    sqlite3.OperationalError("unable to open database file"),
    sqlite3.OperationalError("disk I/O error"),
    sqlite3.OperationalError("database is locked"),
    psycopg.OperationalError("connection failed: Connection refused"),
    psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec"),
    psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
]
BUGS: list[BaseException] = [
    sqlite3.OperationalError("no such table: tenure_leases"),
    psycopg.errors.UndefinedTable("relation tenure_leases does not exist"),
    sqlite3.IntegrityError("UNIQUE constraint failed"),
]


class Faults:
    """Makes the server's store raise ``error`` (``times`` times, or until cleared)."""

    def __init__(self, server: LiveServer) -> None:
        self.store = server._server.config.app.tenure.service.store  # type: ignore[union-attr]
        self.error: BaseException | None = None
        self.times = 0
        self.raised = 0
        self._lock = threading.Lock()
        self._patched: dict[str, Any] = {}

    def patch(self, *names: str) -> None:
        for name in names:
            original = getattr(self.store, name)
            self._patched[name] = original
            setattr(self.store, name, self._wrap(original))

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def faulty(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                if self.error is not None and self.times != 0:
                    self.times -= 1
                    self.raised += 1
                    raise self.error
            return original(*args, **kwargs)

        return faulty

    def restore(self) -> None:
        for name, original in self._patched.items():
            setattr(self.store, name, original)


@pytest.fixture
def faults(live_server: LiveServer) -> Iterator[Faults]:
    found = Faults(live_server)
    found.patch("get", "key_tx", "schema_version")
    try:
        yield found
    finally:
        found.restore()


def test_an_outage_is_503_with_retry_after_and_readyz_fails(
    live_server: LiveServer, faults: Faults
) -> None:
    with live_server.http(live_server.admin_token) as http:
        ok = http.post("/v1/leases/acquire", json={"key": "k", "ttl_ms": 60_000})
        assert ok.status_code == 200
        for error in OUTAGES:
            faults.error, faults.times = error, -1
            for method, path, body in [
                ("GET", "/v1/leases/k", None),
                ("POST", "/v1/leases/acquire", {"key": "k2"}),
                ("GET", "/readyz", None),
            ]:
                resp = http.request(method, path, json=body)
                assert resp.status_code == 503, (error, path, resp.text)
                assert resp.headers["content-type"] == PROBLEM
                assert resp.headers["retry-after"] == "1"
                problem = resp.json()
                assert problem["code"] == "unavailable" and problem["status"] == 503, problem
                assert problem["type"].endswith("/unavailable")
                if path == "/readyz":  # anyone may ask it: it does not say why
                    assert type(error).__name__ not in problem["detail"], problem
                else:
                    assert type(error).__name__ in problem["detail"]
            assert http.get("/healthz").status_code == 200  # alive, not ready
            # The database is back: the same server serves again, nothing restarted.
            faults.error = None
            assert http.get("/readyz").status_code == 200
            lease = http.get("/v1/leases/k").json()["lease"]
            assert (lease["holder"], lease["token"], lease["state"]) == ("root", 1, "live")
        assert http.post("/v1/leases/acquire", json={"key": "k2"}).json()["lease"]["token"] == 1


def test_a_driver_error_that_is_a_bug_stays_500(live_server: LiveServer, faults: Faults) -> None:
    for error in BUGS:
        faults.error, faults.times = error, -1
        # A crash closes its connection (Starlette re-raises it to the server): one per request.
        with live_server.http(live_server.admin_token) as http:
            resp = http.get("/v1/leases/k")
            assert resp.status_code == 500, (error, resp.text)
            assert resp.json()["code"] == "internal" and "retry-after" not in resp.headers


def test_the_client_retries_a_503_and_raises_unavailable_past_its_budget(
    live_server: LiveServer, faults: Faults
) -> None:
    faults.error = sqlite3.OperationalError("database is locked")
    faults.times = 2  # two failures, then the database answers
    policy = RetryPolicy(attempts=5, budget=10.0, backoff=0.01)
    with tenure.Client(live_server.url, token=live_server.admin_token, retry=policy) as client:
        lease = client.acquire("outage/k", ttl_ms=60_000)  # unsafe, but a 503 did nothing
        assert lease.token == 1 and faults.raised == 2
        faults.times = -1
        with pytest.raises(Unavailable) as caught:
            client.get_lease("outage/k")
        assert caught.value.status == 503 and caught.value.code == "unavailable"
        assert faults.raised >= 3  # retried, honouring Retry-After (1 s) within the budget
        faults.error = None
        assert client.get_lease("outage/k").token == 1
