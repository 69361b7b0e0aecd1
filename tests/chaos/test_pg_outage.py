"""Chaos 5: PostgreSQL stopped for less than a ttl and started again.

A private PostgreSQL server (``procs.PrivatePostgres``: the shared test server is never
stopped), a real ``tenure serve`` on it, and a live client holding a lease through
``client.lease(...)`` (its heartbeat renews every ttl/3). PostgreSQL is stopped for a quarter of
the ttl, then started again. During the outage the server never answers 500 (a request that
meets a broken pooled connection is ``503 unavailable`` at once, the others wait for the
database) and ``/readyz`` fails; afterwards it serves again by itself, and the client's lease
was never lost: same token, still live, renewed after the outage.

A second test keeps PostgreSQL down longer than the lease: requests are answered ``503`` with
``Retry-After`` once the pool gives up waiting for a connection, ``/readyz`` is ``503``, the
client's lease is lost on the client's own deadline (never later), and once PostgreSQL is back
the same server serves again and the key is acquirable with a larger token.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from _history import tokens_for

import tenure
from procs import PrivatePostgres, ServeAt

pytestmark = pytest.mark.slow

TTL_S = 10.0
OUTAGE_S = 2.5  # a quarter of the ttl, longer than one heartbeat interval (ttl/3 < 3.4 s)
KEY = "outage/lease"


@pytest.fixture
def private_db() -> Iterator[tuple[PrivatePostgres, str]]:
    pg = PrivatePostgres()
    try:
        with psycopg.connect(pg.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE tenure")
        yield pg, pg.url("tenure")
    finally:
        pg.close()


def test_a_short_postgres_outage_loses_no_live_lease(
    private_db: tuple[PrivatePostgres, str],
) -> None:
    pg, db = private_db
    tokens = tokens_for(db, "holder", "probe")
    server = ServeAt(db)
    try:
        with (
            tenure.Client(server.url, token=tokens["holder"]) as client,
            client.lease(KEY, ttl=TTL_S, task="ride-through") as lease,
            server.http(tokens["probe"]) as probe,
        ):
            token = lease.token
            # Grow the server's pool, so broken connections answer promptly in the outage.
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: probe.get("/v1/stats").status_code, range(24)))
            time.sleep(TTL_S / 3 + 0.3)  # one heartbeat before the outage
            renewals_before = probe.get(f"/v1/leases/{KEY}").json()["lease"]["renewals"]

            pg.stop("fast")
            down = time.monotonic()
            # A burst at once: requests that get one of the pool's now broken connections are
            # answered 503 at once; the others wait for a new connection (see docs/server.md),
            # and a wait that outlasts the probe's timeout counts as waiting, not as an answer.
            with ThreadPoolExecutor(8) as threads:
                burst = list(threads.map(lambda _: _probe(probe), range(8)))
            seen = [r for r in burst if isinstance(r, httpx.Response)]
            timeouts = len(burst) - len(seen)
            while time.monotonic() - down < OUTAGE_S - 1.2:
                found = _probe(probe)
                if isinstance(found, httpx.Response):
                    seen.append(found)
                else:
                    timeouts += 1
            for resp in seen:
                assert resp.status_code == 503, resp.text  # never a 500 while it is down
            ready = _readyz(server.url)
            time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down)))
            pg.start()
            up = time.monotonic()
            outage_s = up - down

            for resp in seen:
                assert resp.headers["content-type"] == "application/problem+json"
                assert float(resp.headers["retry-after"]) > 0
                assert resp.json()["code"] == "unavailable", resp.json()
            assert ready != 200, ready

            back = _wait_ok(probe, f"/v1/leases/{KEY}")
            recovered_s = time.monotonic() - up
            assert _readyz(server.url) == 200
            assert (back["lease"]["token"], back["lease"]["state"]) == (token, "live")
            # The heartbeat goes on after the outage: renewals grow, the lease stays.
            deadline = time.monotonic() + TTL_S
            while time.monotonic() < deadline:
                now = probe.get(f"/v1/leases/{KEY}").json()["lease"]
                if now["renewals"] > back["lease"]["renewals"]:
                    break
                time.sleep(0.2)
            assert now["renewals"] > renewals_before, (renewals_before, now)
            assert now["token"] == token and now["state"] == "live"
            lease.check()  # never lost
            assert not lease.lost and lease.token == token
        events = [
            e["type"]
            for e in probe_events(server, tokens["probe"])
            if e["key"] == KEY and e["type"] != "acquired"
        ]
        assert "expired" not in events and events == ["released"], events
    except BaseException:
        print(server.stderr())  # the server's side of a failure
        raise
    finally:
        server.kill()
    print(
        f"PostgreSQL down {outage_s:.2f} s (ttl {TTL_S} s): {len(seen)} answers 503, "
        f"{timeouts} probes waited; served again {recovered_s:.2f} s after it was back; "
        f"the lease (token {token}) rode through"
    )


def _probe(http: httpx.Client) -> httpx.Response | None:
    try:
        return http.get(f"/v1/leases/{KEY}", timeout=1.0)
    except httpx.TimeoutException:
        return None


def _readyz(url: str) -> int | str:
    try:
        return httpx.get(f"{url}/readyz", timeout=2.0).status_code
    except httpx.TimeoutException:
        return "timeout"


def _wait_ok(http: httpx.Client, path: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            resp = http.get(path, timeout=5)
            if resp.status_code == 200:
                return dict(resp.json())
            assert resp.status_code == 503, resp.text
        except httpx.TimeoutException:
            pass
        assert time.monotonic() < deadline, f"the server did not recover in {timeout} s"
        time.sleep(0.1)


def probe_events(server: ServeAt, token: str) -> list[dict]:
    with server.http(token) as http:
        return list(http.get("/v1/events", params={"limit": 1000}).json()["events"])


LONG_TTL_S = 3.0


def test_a_long_postgres_outage_is_503_and_loses_the_lease_on_time(
    private_db: tuple[PrivatePostgres, str],
) -> None:
    pg, db = private_db
    tokens = tokens_for(db, "holder", "probe")
    server = ServeAt(db)
    try:
        with tenure.Client(server.url, token=tokens["holder"]) as client:
            handle = client.lease(KEY, ttl=LONG_TTL_S, task="too-long")
            lease = handle.__enter__()
            try:
                token = lease.token
                pg.stop("fast")
                down = time.monotonic()
                with ThreadPoolExecutor(2) as threads:
                    # Each waits for a pooled connection until the pool gives up (its timeout).
                    got = threads.submit(_slow_get, server.url, f"/v1/leases/{KEY}", tokens)
                    ready = threads.submit(_slow_get, server.url, "/readyz", tokens)
                    # Meanwhile the client's deadline passes: the lease is lost on it.
                    client_deadline = lease.deadline
                    while not lease.lost and time.monotonic() < client_deadline + 5:
                        time.sleep(0.02)
                    noticed = time.monotonic()
                    assert lease.lost and lease.lost_reason == "deadline", lease.lost_reason
                    assert noticed - client_deadline < 0.5, noticed - client_deadline
                    assert client_deadline - down <= LONG_TTL_S
                    resp, answered = got.result(timeout=60)
                    ready_resp, _ = ready.result(timeout=60)
                for r in (resp, ready_resp):
                    assert r.status_code == 503, r.text
                    assert r.headers["content-type"] == "application/problem+json"
                    assert r.headers["retry-after"] == "1"
                    assert r.json()["code"] == "unavailable"
                # the pool gave up waiting (PoolTimeout), or handed out a connection that the
                # shutdown had cut (AdminShutdown): either way the database is unreachable
                detail = resp.json()["detail"]
                assert "PoolTimeout" in detail or "AdminShutdown" in detail, resp.json()
                waited_s = answered - down
            finally:
                pg.start()
                up = time.monotonic()
                handle.__exit__(None, None, None)
        with server.http(tokens["probe"]) as probe:
            back = _wait_ok(probe, f"/v1/leases/{KEY}")
            recovered_s = time.monotonic() - up
            assert back["lease"]["token"] == token and back["lease"]["state"] != "live"
            again = probe.post("/v1/leases/acquire", json={"key": KEY, "ttl_ms": 1000})
            # after an outage the server cannot prove the database did not go back (a standby
            # promoted meanwhile): the floor was raised from the clock, tokens jump
            assert again.status_code == 200 and again.json()["lease"]["token"] > token
            raised = probe.get("/v1/events", params={"type": "token_floor_set"}).json()
            # the watch saw the outage (reconnect); a new connection found PostgreSQL
            # restarted (database_changed): either, or both, in the order they came
            reasons = [e["reason"] for e in raised["events"]]
            assert reasons and set(reasons) <= {"reconnect", "database_changed"}, reasons
    except BaseException:
        print(server.stderr())
        raise
    finally:
        server.kill()
    print(
        f"PostgreSQL down {up - down:.1f} s, lease ttl {LONG_TTL_S} s: lost on the client's "
        f"deadline (+{noticed - client_deadline:.2f} s); a request waited {waited_s:.1f} s for "
        f"its 503; served again {recovered_s:.2f} s after PostgreSQL was back"
    )


def _slow_get(url: str, path: str, tokens: dict[str, str]) -> tuple[httpx.Response, float]:
    headers = {"Authorization": f"Bearer {tokens['probe']}"}
    resp = httpx.get(f"{url}{path}", headers=headers, timeout=60)
    return resp, time.monotonic()
