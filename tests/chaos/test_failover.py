"""PostgreSQL failover under load: two tenure servers on a primary and its standby (libpq's
multi-host URL), a fleet of clients, ``kill -9`` of the primary, promotion of the standby.

Checked on the history the clients saw (only acknowledged replies count):

- tokens only grow per key across the failover: a grant acknowledged before another's request
  started has the smaller token, and no token is granted twice (both standbys);
- no stale write accepted: no fenced write is acknowledged with a token older than one already
  granted before the write was sent;
- no acknowledged write lost (synchronous standby): each key's register is at least at the last
  acknowledged version;
- every waiter is answered (a lease or an error) within its bound;
- the event stream neither repeats nor skips: the ids it delivered are increasing, and every event
  the promoted database holds between its first and last delivered id was delivered.

The asynchronous case loses the last commits on purpose: the standby is stopped, the primary takes
more grants, dies, and the stale standby is started and promoted.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

import tenure
from procs import ServeAt
from tenure.client import RetryPolicy
from tenure.errors import StaleToken, TenureError

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from pg_pair import PgPair

KEYS = [f"ha/k{i}" for i in range(4)]
WORKERS = 6
BEFORE_S, AFTER_S = 2.5, 6.0  # load before the failover, and after it (bounded)


@dataclass
class History:
    grants: list[tuple[str, int, float, float]] = field(default_factory=list)  # key tok start ack
    writes: list[tuple[str, int, int, float, float]] = field(default_factory=list)  # +version
    waiters: list[tuple[float, str]] = field(default_factory=list)  # seconds, outcome
    events: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _worker(url: str, token: str, stop: threading.Event, seen: History, n: int) -> None:
    client = tenure.Client(url, token=token, retry=RetryPolicy(attempts=30, budget=20))
    i = n
    try:
        while not stop.is_set():
            key = KEYS[i % len(KEYS)]
            i += 1
            start = time.monotonic()
            try:
                lease = client.acquire(key, ttl_ms=5_000, wait_ms=3_000)
            except TenureError as err:
                with seen.lock:
                    seen.errors.append(f"acquire {type(err).__name__}")
                continue
            with seen.lock:
                seen.grants.append((key, lease.token, start, time.monotonic()))
            wstart = time.monotonic()
            try:
                wrote = client.fenced_write(key, lease.token, {"n": i}, op_id=uuid.uuid4().hex)
                with seen.lock:
                    seen.writes.append((key, lease.token, wrote.version, wstart, time.monotonic()))
            except StaleToken:
                pass  # refused: fine (someone newer holds the key)
            except TenureError as err:
                with seen.lock:
                    seen.errors.append(f"write {type(err).__name__}")
            try:
                client.release(key, lease.token)
            except TenureError as err:
                with seen.lock:
                    seen.errors.append(f"release {type(err).__name__}")
    finally:
        client.close()


def _waiter(url: str, token: str, seen: History) -> None:
    """Holds ``ha/wait`` from one session and waits for it from another, across the failover."""
    holder = tenure.Client(url, token=token, retry=RetryPolicy(attempts=30, budget=20))
    waiter = tenure.Client(url, token=token, retry=RetryPolicy(attempts=30, budget=20))
    try:
        holder.acquire("ha/wait", ttl_ms=3_000)
        start = time.monotonic()
        try:
            waiter.acquire("ha/wait", ttl_ms=5_000, wait_ms=15_000)
            outcome = "granted"
        except TenureError as err:
            outcome = type(err).__name__
        with seen.lock:
            seen.waiters.append((time.monotonic() - start, outcome))
    finally:
        holder.close()
        waiter.close()


def _follower(url: str, token: str, stop: threading.Event, seen: History) -> None:
    client = tenure.Client(url, token=token, retry=RetryPolicy(attempts=30, budget=20))
    after = 0
    try:
        while not stop.is_set():
            try:
                page = client.events(after=after, wait_ms=500, limit=500)
            except TenureError as err:
                with seen.lock:
                    seen.errors.append(f"events {type(err).__name__}")
                continue
            for event in page:
                seen.events.append(event.id)
                after = event.id
    finally:
        client.close()


@pytest.fixture(params=["sync", "async"])
def pair(request: pytest.FixtureRequest) -> Iterator[PgPair]:
    started = PgPair.start(
        Path(tempfile.mkdtemp(prefix="tenure-pair-")), sync=request.param == "sync"
    )
    try:
        yield started
    finally:
        started.remove()


def _admin(pair: PgPair) -> str:
    from tenure.service.principals import Principals

    store = tenure.open_store(pair.url)
    try:
        return Principals(store).bootstrap("root", "human", ("admin",), None).token
    finally:
        store.close()


def _lose_the_last_commits(pair: PgPair, url: str, token: str, seen: History) -> None:
    """Asynchronous standby: cut it off and let the primary grant more (acknowledged to a
    client, so in the history), which the promoted standby will not have."""
    pair.standby.stop()
    client = tenure.Client(url, token=token)
    try:
        for key in KEYS:
            for _ in range(3):
                start = time.monotonic()
                lease = client.acquire(key, ttl_ms=1_000)
                seen.grants.append((key, lease.token, start, time.monotonic()))
                client.release(key, lease.token)
    finally:
        client.close()


def test_failover_keeps_tokens_growing_and_loses_nothing_acknowledged(pair: PgPair) -> None:
    token = _admin(pair)  # (also migrates the database)
    servers = [ServeAt(pair.url), ServeAt(pair.url)]
    seen, stop = History(), threading.Event()
    threads = [
        threading.Thread(
            target=_worker, args=(servers[n % 2].url, token, stop, seen, n), daemon=True
        )
        for n in range(WORKERS)
    ]
    threads.append(
        threading.Thread(target=_follower, args=(servers[0].url, token, stop, seen), daemon=True)
    )
    try:
        for thread in threads:
            thread.start()
        time.sleep(BEFORE_S)
        if not pair.sync:
            stop.set()
            for thread in threads[:WORKERS]:
                thread.join(30)
            _lose_the_last_commits(pair, servers[1].url, token, seen)
            stop.clear()
            threads[:WORKERS] = [
                threading.Thread(
                    target=_worker, args=(servers[n % 2].url, token, stop, seen, n), daemon=True
                )
                for n in range(WORKERS)
            ]
            for thread in threads[:WORKERS]:
                thread.start()
        waiting = threading.Thread(target=_waiter, args=(servers[1].url, token, seen), daemon=True)
        waiting.start()
        time.sleep(0.3)
        if not pair.sync:
            pair.primary.stop()  # it dies; the stale standby comes up and is promoted
            pair.standby.start()
        pair.failover()
        failed_over = time.monotonic()
        time.sleep(AFTER_S)
        stop.set()
        for thread in [*threads, waiting]:
            thread.join(40)
            assert not thread.is_alive(), "a client hung across the failover"
    finally:
        stop.set()
        for server in servers:
            server.kill()
    after = [g for g in seen.grants if g[2] > failed_over]
    assert len(after) >= 5, f"too little load after the failover: {len(after)}, {seen.errors}"
    _tokens_only_grow(seen)
    _no_stale_write(seen)
    assert seen.waiters and seen.waiters[0][0] < 30, seen.waiters
    _stream_without_gaps_or_repeats(pair, seen)
    if pair.sync:
        _no_acknowledged_write_lost(pair, seen)


def _tokens_only_grow(seen: History) -> None:
    by_key: dict[str, list[tuple[str, int, float, float]]] = {}
    for grant in seen.grants:
        by_key.setdefault(grant[0], []).append(grant)
    for key, grants in by_key.items():
        tokens = [g[1] for g in grants]
        assert len(tokens) == len(set(tokens)), f"{key}: a token granted twice"
        for a in grants:
            for b in grants:
                if a[3] < b[2]:  # a was acknowledged before b was asked for
                    assert b[1] > a[1], f"{key}: token {b[1]} granted after {a[1]}"


def _no_stale_write(seen: History) -> None:
    for key, tok, _version, wstart, _ack in seen.writes:
        newer = [g for g in seen.grants if g[0] == key and g[1] > tok and g[3] < wstart]
        assert not newer, f"{key}: write with {tok} accepted after {newer[0][1]} was granted"


def _no_acknowledged_write_lost(pair: PgPair, seen: History) -> None:
    with psycopg.connect(pair.url, autocommit=True) as conn:
        for key in KEYS:
            acked = [w[2] for w in seen.writes if w[0] == key]
            if not acked:
                continue
            row = conn.execute(
                "SELECT version FROM tenure_fenced WHERE key = %s", (key,)
            ).fetchone()
            assert row is not None and row[0] >= max(acked), f"{key}: acknowledged write lost"


def _stream_without_gaps_or_repeats(pair: PgPair, seen: History) -> None:
    ids = seen.events
    assert ids, f"the stream delivered nothing: {seen.errors}"
    assert ids == sorted(set(ids)), "the stream repeated or reordered events"
    with psycopg.connect(pair.url, autocommit=True) as conn:
        stored = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM tenure_events WHERE id BETWEEN %s AND %s ORDER BY id",
                (ids[0], ids[-1]),
            )
        ]
    missed = sorted(set(stored) - set(ids))
    assert not missed, f"the stream skipped {len(missed)} events: {missed[:10]}"
