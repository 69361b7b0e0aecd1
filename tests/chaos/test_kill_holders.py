"""Chaos 1: holders ``kill -9``ed at random moments under load; nobody cleans up.

Four client processes (``tenure.Client`` against a real ``tenure serve``) acquire, write the
fenced register, renew and release four shared keys in a loop, and each is ``SIGKILL``ed at a
random moment. Then: every lease a dead holder left behind ends as ``expired``, recorded within
its ttl plus one second of its last renewal (its deadline plus one second), and the key is
acquirable again with a larger token; ``GET /v1/stats`` counts exactly the endings that happened
(the released ones the history acknowledged, at most the ones it attempted, and one expiry per
lease nobody released); the merged history passes the checker.
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

TTL_MS = 1500
KEYS = [f"kill/{i}" for i in range(4)]
WORKERS = 4


def test_holders_killed_at_random_leave_nothing_to_clean_up(
    server: ServeAt, store_url: str, tmp_path: Path
) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    names = [f"h{i}" for i in range(WORKERS)]
    tokens = tokens_for(store_url, *names, "checker", roles=())
    logs = tmp_path / "history"
    logs.mkdir()
    args = [f"--keys={','.join(KEYS)}", f"--ttl-ms={TTL_MS}", "--seconds=30", "--hold-ms=300"]
    workers = [
        Worker(
            "cycle",
            server.url,
            tokens[n],
            n,
            logs / f"{n}.jsonl",
            *args,
            f"--seed={rnd.randrange(2**32)}",
        )
        for n in names
    ]
    try:
        for w in workers:
            w.expect("ready")
        for w in workers:  # under load: each has acquired something before it dies
            w.expect("acquired")
        kills = sorted((rnd.uniform(0.3, 2.5), w) for w in workers)
        start = time.monotonic()
        for at, w in kills:
            time.sleep(max(0.0, start + at - time.monotonic()))
            w.kill()
        for w in workers:
            assert w.proc.wait(10) < 0, (w.name, w.stderr())
    finally:
        for w in workers:
            w.close()
    context = f"seed {seed}"
    history = load(logs)
    acked = [o for o in history if o.op == "acquire" and o.ok]
    assert len(acked) >= WORKERS, context

    with server.http(tokens["checker"]) as http:
        # What the dead left behind: live leases, each ending on its own.
        left = http.get("/v1/leases", params={"prefix": "kill/"}).json()["leases"]
        assert {lease["holder"] for lease in left} <= set(names), context
        lags = []
        for lease in left:
            deadline = lease["expires_at"]
            give_up = time.monotonic() + (deadline - now_ms(http)) / 1000 + 5
            while True:
                ended = [
                    e
                    for e in all_events(http, key=lease["key"])
                    if e["token"] == lease["token"] and e["type"] in ENDINGS
                ]
                if ended:
                    break
                assert time.monotonic() < give_up, f"{context}: {lease} never ended"
                time.sleep(0.05)
            assert [e["type"] for e in ended] == ["expired"], (context, ended)
            lag = ended[0]["at"] - deadline
            assert 0 <= lag <= 1000, (context, lease, ended)
            assert lease["expires_at"] - lease["renewed_at"] == TTL_MS
            lags.append(lag)
        # Every key is acquirable again, with a token above everything issued.
        for key in KEYS:
            wait_until_free = http.post(
                "/v1/leases/acquire", json={"key": key, "ttl_ms": 1000, "wait_ms": 10_000}
            )
            assert wait_until_free.status_code == 200, (context, wait_until_free.text)
            got = wait_until_free.json()["lease"]["token"]
            assert got > max((o.token or 0 for o in acked if o.key == key), default=0), context
            released = http.post("/v1/leases/release", json={"key": key, "token": got})
            assert released.json()["released"] is True

        # The counters match what happened.
        events = all_events(http)
        by_type: dict[str, int] = {}
        for e in events:
            by_type[e["type"]] = by_type.get(e["type"], 0) + 1
        stats = http.get("/v1/stats").json()
        endings = stats["endings"]
        assert endings["released"] == by_type.get("released", 0), (context, stats)
        assert endings["expired"] == by_type.get("expired", 0), (context, stats)
        assert endings["force_released"] == 0 and endings["taken_over"] == 0
        assert (
            stats["acquisitions"]
            == by_type["acquired"]
            == by_type.get("released", 0) + by_type.get("expired", 0)
        ), (context, stats, by_type)
        mine = [o for o in history if o.op == "release"]
        acked_releases = sum(1 for o in mine if o.ok and o.released)
        maybe = sum(1 for o in mine if o.ok is None)
        released_by_workers = by_type.get("released", 0) - len(KEYS)  # the checker's own
        assert acked_releases <= released_by_workers <= acked_releases + maybe, context
        assert by_type.get("expired", 0) >= len(left), context
        assert stats["live_leases"] == 0

        assert check(history) == [], context
        assert check_durable(history, events, registers(http, KEYS)) == [], context
    print(
        f"{context}: {len(acked)} acquisitions by {WORKERS} killed holders, "
        f"{len(left)} leases left behind, expiry recorded at most {max(lags, default=0)} ms "
        f"after the deadline, endings {endings}"
    )


ENDINGS = ("released", "expired", "force_released", "taken_over")


def now_ms(http: object) -> int:
    return int(time.time() * 1000)
