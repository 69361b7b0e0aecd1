"""Chaos 3: the server ``kill -9``ed mid-load and restarted, on SQLite and PostgreSQL.

Three client processes (``tenure.Client``, retrying within a budget) acquire, write, renew and
release three shared keys while the ``tenure serve`` process is ``SIGKILL``ed at a random moment
and started again on the same port and database. Then: every client went on working after the
restart by itself; nothing acknowledged is lost (every acknowledged acquisition and release is
in the event log, every acknowledged write in the register); no token was issued twice; the
merged history passes the checker.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from _history import Worker, all_events, registers, tokens_for

from checker import check, check_durable, load
from procs import ServeAt

pytestmark = pytest.mark.slow

KEYS = [f"crash/{i}" for i in range(3)]
WORKERS = 3
TTL_MS = 3000
RUN_S = 14.0


def test_kill_9_of_the_server_loses_nothing_acknowledged(
    server: ServeAt, store_url: str, tmp_path: Path
) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    context = f"seed {seed}"
    names = [f"c{i}" for i in range(WORKERS)]
    tokens = tokens_for(store_url, *names, "checker")
    logs = tmp_path / "history"
    logs.mkdir()
    args = [
        f"--keys={','.join(KEYS)}", f"--ttl-ms={TTL_MS}", f"--seconds={RUN_S}", "--hold-ms=200",
        "--budget=30",
    ]  # fmt: skip
    workers = [
        Worker("cycle", server.url, tokens[n], n, logs / f"{n}.jsonl", *args, f"--seed={i}{seed}")
        for i, n in enumerate(names)
    ]
    try:
        for w in workers:
            w.expect("acquired")
        time.sleep(rnd.uniform(0.2, 1.5))
        server.kill()
        killed = time.monotonic()
        restart_s = server.restart()
        for w in workers:
            assert w.proc.wait(RUN_S + 40) == 0, (w.name, w.stderr())
    finally:
        for w in workers:
            w.close()

    history = load(logs)
    before = [o for o in history if o.ok and o.received < killed]
    after = [o for o in history if o.ok and o.sent > killed]
    assert before, context
    for n in names:  # every client recovered by itself
        assert any(o.client == n for o in after), (context, n)
    recovered_s = min(o.received for o in after) - killed
    unknown = [o for o in history if o.ok is None]

    with server.http(tokens["checker"]) as http:
        events = all_events(http)
        acquired = [(e["key"], e["token"]) for e in events if e["type"] == "acquired"]
        assert len(acquired) == len(set(acquired)), context  # no token issued twice
        assert check(history) == [], context
        assert check_durable(history, events, registers(http, KEYS)) == [], context
    print(
        f"{context}: {len(before)} operations acknowledged before the kill, {len(after)} after; "
        f"{len(unknown)} of unknown outcome; restart {restart_s:.2f} s; first acknowledged "
        f"operation {recovered_s:.2f} s after the kill"
    )
