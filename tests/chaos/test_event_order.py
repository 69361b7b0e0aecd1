"""The event log's order across servers: three ``tenure serve`` on one PostgreSQL database.

Writers on every server acquire and release keys of their own at once (their groups commit side
by side, each drawing event ids while others are in flight), while on each server three readers
follow the log from the start: one long-polls ``GET /v1/events`` with ``after=`` the ``next`` it
was given, one pages through it a few events at a time without waiting, one follows the
server-sent stream (``/v1/events/stream``, the dashboard's), reconnecting with
``Last-Event-ID`` whenever it was quiet for a second. Then: every reader saw every
committed event exactly once, in the one order of their ids, the order the log reads in at the
end. An event id handed out without the ordering (a transaction committing an id below one a
reader already passed) shows up here as an event some reader never saw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from _history import all_events, tokens_for

import tenure
from procs import ServeAt

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("backend", ["postgres"], indirect=True)]

SERVERS = 3
WRITERS_PER_SERVER = 3
RUN_S = 4.0  # the writers stop then (or after MAX_ROUNDS each, whichever comes first)
MAX_ROUNDS = 100
KEYS_PER_ROUND = 10
SETTLE_S = 30.0  # the most the readers take to reach the end once the writers stopped


@pytest.fixture
def servers(store_url: str) -> Iterator[list[ServeAt]]:
    started: list[ServeAt] = []
    try:
        for _ in range(SERVERS):
            started.append(ServeAt(store_url))
        yield started
    finally:
        for srv in started:
            srv.kill()


class Reader(threading.Thread):
    """Follows the log on one server until it has seen ``self.last`` (set once the writers
    stopped) or the deadline; the ids it saw, in order."""

    def __init__(self, url: str, token: str, how: str) -> None:
        super().__init__(daemon=True, name=f"{how}@{url}")
        self.url, self.token, self.how = url, token, how
        self.seen: list[int] = []
        self.last: int | None = None
        self.deadline = time.monotonic() + RUN_S + SETTLE_S
        self.error: BaseException | None = None

    def done(self) -> bool:
        if time.monotonic() > self.deadline:
            return True
        return self.last is not None and bool(self.seen) and self.seen[-1] >= self.last

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            with httpx.Client(base_url=self.url, headers=headers, timeout=10) as http:
                if self.how == "stream":
                    self._stream(http)
                else:
                    self._poll(http, wait_ms=1000 if self.how == "long-poll" else 0)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _poll(self, http: httpx.Client, wait_ms: int) -> None:
        after = 0
        limit = 50 if wait_ms else 3
        while not self.done():
            params = {"after": after, "limit": limit, "wait_ms": wait_ms}
            resp = http.get("/v1/events", params=params)
            resp.raise_for_status()
            page = resp.json()
            self.seen.extend(e["id"] for e in page["events"])
            after = page["next"]
            if not wait_ms and not page["events"]:
                time.sleep(0.002)  # pacing only: the paging reader does not wait server-side

    def _stream(self, http: httpx.Client) -> None:
        """As a browser's ``EventSource`` does: reconnect with ``Last-Event-ID`` (here after a
        second without a line, so that the reader looks at :meth:`done` again)."""
        while not self.done():
            resume = {"Last-Event-ID": str(self.seen[-1])} if self.seen else {}
            with http.stream("GET", "/v1/events/stream", headers=resume, timeout=1) as resp:
                resp.raise_for_status()
                try:
                    for line in resp.iter_lines():
                        if line.startswith("id: "):
                            self.seen.append(int(line[4:]))
                        if self.done():
                            return
                except httpx.ReadTimeout:
                    continue


def write(client: tenure.Client, name: str, stop: float, errors: list[BaseException]) -> None:
    """Acquire keys one by one (each call joins its server's group), then release them all in
    one call (one transaction with an event per key: a longer stretch of ids in flight)."""
    try:
        for _ in range(MAX_ROUNDS):
            if time.monotonic() > stop:
                return
            for n in range(KEYS_PER_ROUND):
                client.acquire(f"order/{name}/{n}", ttl_ms=60_000)
            client.release_all()
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def test_every_reader_on_every_server_sees_each_event_once_in_one_order(
    servers: list[ServeAt], store_url: str
) -> None:
    names = [f"w{s}{i}" for s in range(SERVERS) for i in range(WRITERS_PER_SERVER)]
    tokens = tokens_for(store_url, *names, "reader")
    slow_commits(store_url)
    start = all_events(httpx.Client(base_url=servers[0].url, headers=_auth(tokens["reader"])))
    assert start == [] or all(e["type"] != "acquired" for e in start)
    readers = [
        Reader(srv.url, tokens["reader"], how)
        for srv in servers
        for how in ("long-poll", "paging", "stream")
    ]
    for r in readers:
        r.start()
    clients = [
        tenure.Client(servers[i % SERVERS].url, token=tokens[n]) for i, n in enumerate(names)
    ]
    stop = time.monotonic() + RUN_S
    errors: list[BaseException] = []
    writers = [
        threading.Thread(target=write, args=(c, n, stop, errors), daemon=True)
        for c, n in zip(clients, names, strict=True)
    ]
    for w in writers:
        w.start()
    for w in writers:
        w.join(RUN_S + 60)
    for c in clients:
        c.close()
    assert not errors, errors
    with httpx.Client(base_url=servers[1].url, headers=_auth(tokens["reader"])) as http:
        log = [e["id"] for e in all_events(http)]
    assert len(log) > 100, len(log)  # the writers did write, side by side
    assert log == sorted(set(log))
    for r in readers:
        r.last = log[-1]
    for r in readers:
        r.join(SETTLE_S + 5)
    for r in readers:
        assert r.error is None, (r.name, r.error)
        missing = sorted(set(log) - set(r.seen))
        repeated = len(r.seen) - len(set(r.seen))
        assert not missing, (r.name, f"{len(missing)} events never seen", missing[:20])
        assert not repeated, (r.name, f"{repeated} events seen twice")
        assert r.seen == log, (r.name, "not in the log's order")


def slow_commits(url: str) -> None:
    """Commits that take a while once their events are in: each transaction that appends
    events sleeps a few milliseconds at its COMMIT (a deferred trigger, run then), its ids drawn
    and not yet visible. (A slow disk or a synchronous standby does the same; it widens the
    window in which a reader could pass an id still in flight.)"""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SLOW_COMMIT)


SLOW_COMMIT = """
CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(random() * 0.004);
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_slow_commit AFTER INSERT ON tenure_events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_slow_commit();
"""


def _auth(token: str) -> dict[str, Any]:
    return {"Authorization": f"Bearer {token}"}
