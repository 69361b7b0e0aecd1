"""Each walkthrough of docs/fencing.md, run as written against a real tenure server, SQLite
file, PostgreSQL database, HTTP server and redis-server, so the docs cannot drift.

A walkthrough is the ```python block after a ``<!-- walkthrough: NAME -->`` line. Each test
runs its block in a fresh namespace (with TENURE_URL and TENURE_TOKEN set, in a scratch
directory), checks what it wrote, then checks that a stale token is refused there.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tenure
from redis_server import RedisServer
from tenure.fence import TableFence, headers
from uvicorn_thread import Served

DOC = Path(__file__).resolve().parents[2] / "docs" / "fencing.md"
MARK = re.compile(r"<!-- walkthrough: ([\w-]+) -->\n```python\n(.*?)```", re.DOTALL)
NAMES = {"sqlite", "postgres-sqlalchemy", "http-service", "http-holder", "redis"}


def walkthroughs() -> dict[str, str]:
    text = DOC.read_text()
    found = dict(MARK.findall(text))
    assert text.count("<!-- walkthrough:") == len(found), "a marker without a python block"
    return found


def run(name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"walkthrough_{name.replace('-', '_')}"}
    exec(compile(walkthroughs()[name], f"{DOC}:{name}", "exec"), namespace)
    return namespace


@pytest.fixture
def as_user(live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The environment a walkthrough's reader has: a tenure URL and token, a working dir."""
    monkeypatch.setenv("TENURE_URL", live_server.url)
    monkeypatch.setenv("TENURE_TOKEN", live_server.token_for("reader-of-the-docs"))
    monkeypatch.chdir(tmp_path)
    return live_server


@pytest.fixture
def pg_url(pg_databases: Any) -> Iterator[str]:
    name = pg_databases.create(migrated=False)
    yield pg_databases.url(name)
    pg_databases.drop_later(name)


def test_every_walkthrough_is_tested() -> None:
    assert set(walkthroughs()) == NAMES


def test_sqlite(as_user: Any) -> None:
    first = run("sqlite")
    first["db"].close()
    db = sqlite3.connect("reports.sqlite")
    assert db.execute("SELECT name, body FROM reports").fetchall() == [("nightly", "42 rows")]
    token = TableFence().current(db, "reports/nightly")
    assert token == first["lease"].token
    second = run("sqlite")  # the next night's run: a newer token
    # the first run, paused and back: refused
    with (
        pytest.raises(tenure.StaleToken),
        second["fence"].transaction(db, "reports/nightly", token) as late,
    ):
        late.execute("DELETE FROM reports")
    assert db.execute("SELECT count(*) FROM reports").fetchone() == (1,)
    second["db"].close()
    db.close()


def test_postgres_sqlalchemy(as_user: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", pg_url)
    ns = run("postgres-sqlalchemy")
    ns["engine"].dispose()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT month, total FROM invoices").fetchall() == [("2026-06", 1234)]
        token = TableFence().current(conn, "invoices/2026-06")
    # a second run: a newer token; the first one is stale from its grant on
    ns = run("postgres-sqlalchemy")
    with (
        ns["engine"].connect() as conn,
        pytest.raises(tenure.StaleToken),
        ns["fence"].transaction(conn, "invoices/2026-06", token),
    ):
        pytest.fail("the stale block must not run")
    ns["engine"].dispose()


def test_http_service(as_user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    service = run("http-service")
    served = Served(service["app"])
    try:
        monkeypatch.setenv("ORDERS_URL", served.url)
        with tenure.Client() as earlier:  # an earlier holder of the key
            old = earlier.acquire("orders/17", ttl_ms=30_000)
            earlier.release("orders/17", old.token)
        holder = run("http-holder")
        lease = holder["lease"]
        assert orders() == [("17", '{"total": 99}', lease.token)]
        auth = {"Authorization": "Bearer s3cret"}
        for token in (old.token, 2**62):  # stale (and never admitted anywhere), never issued
            reply = served.http.put(
                "/orders/17", json={"total": 1}, headers={**auth, **headers("orders/17", token)}
            )
            assert reply.status_code == 409, reply.text
            assert reply.headers["content-type"] == "application/problem+json"
        stranger = served.http.put("/orders/17", json={}, headers={"Tenure-Token": "5"})
        assert stranger.status_code == 401
        assert orders() == [("17", '{"total": 99}', lease.token)]
    finally:
        served.stop()


def orders() -> list[tuple[Any, ...]]:
    with sqlite3.connect("orders.sqlite") as db:
        return db.execute("SELECT id, body, token FROM orders").fetchall()


def test_redis(as_user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = RedisServer()
    try:
        monkeypatch.setenv("REDIS_URL", server.url)
        ns = run("redis")
        r = server.client()
        assert r.get("prices:eu") == b'{"eur": 1.0, "chf": 0.94}'
        token = ns["lease"].token
        assert ns["fence"].current("prices/eu") == token
        run("redis")  # the next holder: admitted on acquire
        with pytest.raises(tenure.StaleToken):
            ns["fence"].set("prices/eu", token, "prices:eu", "stale")
        assert r.get("prices:eu") == b'{"eur": 1.0, "chf": 0.94}'
    finally:
        server.stop()
