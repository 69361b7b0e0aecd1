"""Replicas that share one bearer token: eight processes under one principal, each its own session,
contend for one key for 30 s through :class:`tenure.Client`, and half of them are ``kill -9``ed at
random moments. The sessions must exclude each other like strangers: the history checker finds no
two holders of the key at once, no token granted twice and no stale write accepted, and the
server's event log and register agree with every acknowledged operation.
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

KEY = "replicated/job"
TTL_MS = 1_000
WORKERS = 8
SECONDS = 30


def test_sessions_of_one_principal_exclude_each_other_under_kill_9(
    server: ServeAt, store_url: str, tmp_path: Path
) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    tokens = tokens_for(store_url, "svc", "checker")
    logs = tmp_path / "history"
    logs.mkdir()
    args = [f"--keys={KEY}", f"--ttl-ms={TTL_MS}", f"--seconds={SECONDS}", "--hold-ms=200"]
    workers = [
        Worker(
            "cycle",
            server.url,
            tokens["svc"],  # one token for all: one principal
            f"replica-{i}",
            logs / f"replica-{i}.jsonl",
            *args,
            "--principal=svc",
            f"--session=replica-{i}",
            f"--seed={rnd.randrange(2**32)}",
        )
        for i in range(WORKERS)
    ]
    try:
        for w in workers:
            w.expect("ready")
        victims = rnd.sample(workers, WORKERS // 2)
        kills = sorted((rnd.uniform(1.0, SECONDS - 5), i) for i, _ in enumerate(victims))
        start = time.monotonic()
        for at, i in kills:
            time.sleep(max(0.0, start + at - time.monotonic()))
            victims[i].kill()
        for w in workers:
            status = w.proc.wait(SECONDS + 30)
            assert status == (-9 if w in victims else 0), (w.name, status, w.stderr())
    finally:
        for w in workers:
            w.close()
    context = f"seed {seed}"
    history = load(logs)
    acked = [o for o in history if o.op == "acquire" and o.ok]
    holders = {o.holder for o in acked}
    refused = [o for o in history if o.op == "acquire" and o.code == "lease_held"]
    writes = [o for o in history if o.op == "write" and o.ok]
    # Every session got the key at some point, and siblings were refused while another held it.
    assert len(holders) >= WORKERS // 2 and all(h.startswith("svc#replica-") for h in holders)
    assert len(refused) > len(acked), (context, len(refused), len(acked))
    assert writes, context

    with server.http(tokens["checker"]) as http:
        events = all_events(http, key=KEY)
        assert check(history) == [], context
        assert check_durable(history, events, registers(http, [KEY])) == [], context
    print(
        f"{context}: {len(acked)} acquisitions by {len(holders)} sessions of one principal, "
        f"{len(refused)} refused as held by a sibling, {len(writes)} fenced writes, "
        f"{len(victims)} replicas killed"
    )
