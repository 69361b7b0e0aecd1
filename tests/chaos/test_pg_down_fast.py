"""PostgreSQL stopped: every call is ``503`` within about a second, not after a timeout.

A private PostgreSQL server (``procs.PrivatePostgres``; the shared test server is never
stopped) and a real ``tenure serve`` on it. PostgreSQL is stopped: the server's watch notices
within half a second and from then on each call is answered ``503 unavailable`` at once naming
the database problem (before, a call that found no pooled connection waited for the pool's
30 s, past the client's 10 s timeout), ``/readyz`` is ``503`` saying the database is
unreachable, ``/healthz`` stays ``200``, and the client raises
:class:`tenure.errors.Unavailable` naming it. Once PostgreSQL is started again the same server
serves again by itself and ``/readyz`` is ``200``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from _history import tokens_for

import tenure
from procs import PrivatePostgres, ServeAt
from tenure.client import RetryPolicy
from tenure.errors import Unavailable

pytestmark = pytest.mark.slow

DOWN_FOR_S = 5.0  # longer than a few answers, well under the pool's 30 s
#: how long one call may take while it is down: the watch notices within about a second (a
#: loaded machine adds to that); the pool's wait, which this replaces, was 30 s
ANSWER_S = 4.0


@pytest.fixture
def private_db() -> Iterator[tuple[PrivatePostgres, str]]:
    pg = PrivatePostgres()
    try:
        with psycopg.connect(pg.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE tenure")
        yield pg, pg.url("tenure")
    finally:
        pg.close()


def test_a_stopped_postgres_is_503_at_once_and_not_ready_until_it_is_back(
    private_db: tuple[PrivatePostgres, str],
) -> None:
    pg, db = private_db
    token = tokens_for(db, "probe")["probe"]
    server = ServeAt(db)
    try:
        with server.http(token) as http:
            assert http.post("/v1/leases/acquire", json={"key": "k"}).status_code == 200
            pg.stop("fast")
            down = time.monotonic()
            answers: list[tuple[float, int]] = []
            while time.monotonic() - down < DOWN_FOR_S:  # calls in a row: each answered soon
                asked = time.monotonic()
                resp = http.get("/v1/leases/k", timeout=ANSWER_S)  # a timeout fails the test
                answers.append((time.monotonic() - asked, resp.status_code))
                assert resp.status_code == 503, resp.text
                assert resp.json()["code"] == "unavailable"
                assert resp.headers["retry-after"] == "1"
            detail = resp.json()["detail"]
            assert "cannot be reached" in detail and "PoolTimeout" in detail, detail
            ready = http.get("/readyz", timeout=ANSWER_S)
            assert ready.status_code == 503, ready.text
            assert "the database cannot be reached" in ready.json()["detail"], ready.json()
            assert http.get("/healthz", timeout=ANSWER_S).status_code == 200
            quick = RetryPolicy(attempts=2, budget=2.0)
            with (
                tenure.Client(server.url, token=token, retry=quick, timeout=5) as client,
                pytest.raises(Unavailable) as raised,
            ):
                client.acquire("while-down")
            assert "the database cannot be reached" in str(raised.value), raised.value

            pg.start()
            up = time.monotonic()
            while True:
                try:
                    back = http.get("/v1/leases/k", timeout=5)
                    if back.status_code == 200:
                        break
                    assert back.status_code == 503, back.text
                except httpx.TimeoutException:
                    pass
                assert time.monotonic() - up < 30, "the server did not serve again"
                time.sleep(0.1)
            recovered_s = time.monotonic() - up
            assert back.json()["lease"]["holder"] == "probe"
            assert http.get("/readyz", timeout=5).status_code == 200
    except BaseException:
        print(server.stderr())
        raise
    finally:
        server.kill()
    slowest = max(took for took, _ in answers)
    print(
        f"PostgreSQL down {DOWN_FOR_S} s: {len(answers)} calls, all 503, the first in "
        f"{answers[0][0]:.2f} s, the slowest in {slowest:.2f} s; served again "
        f"{recovered_s:.2f} s after it was back"
    )
