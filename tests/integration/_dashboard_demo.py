"""An hour of a small fleet's history, seeded in a few seconds on a shifted clock: the demo
server of the dashboard's screenshots (``test_dashboard.py``)."""

from __future__ import annotations

import random
import time
from typing import Any

import httpx


def ok(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    return response.json()


class ShiftedClock:
    """The wall clock moved by ``offset`` ms: seeds an hour of history in a few seconds."""

    def __init__(self) -> None:
        self.offset = 0

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset


def seed_history(url: str, tokens: dict[str, str], clock: ShiftedClock) -> None:
    """An hour of a small fleet: acquisitions, releases, expiries, conflicts, force-releases,
    then live leases and a work queue. Deterministic (seeded)."""
    rng = random.Random(7)
    http = {
        name: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {t}"})
        for name, t in tokens.items()
    }
    workers = ["build-agent-1", "build-agent-2", "etl-nightly", "deploy-bot", "reviewer/ana"]
    keys = [
        "jobs/nightly-report",
        "jobs/reindex",
        "deploy/prod",
        "deploy/staging",
        "etl/orders",
        "etl/customers",
        "reports/weekly",
        "locks/migrations",
        "cache/warmup",
    ]
    flaky = {"etl-nightly": 0.6, "build-agent-2": 0.3}  # how often each one's leases expire
    clock.offset = -58 * 60_000
    while clock.offset < -3 * 60_000:  # until three minutes ago
        held: list[tuple[str, str, int]] = []
        for key in rng.sample(keys, 5):
            who = rng.choice(workers)
            r = http[who].post(
                "/v1/leases/acquire",
                json={"key": key, "ttl_ms": 60_000, "task": f"run-{rng.randint(100, 999)}"},
            )
            if r.is_success:
                held.append((who, key, r.json()["lease"]["token"]))
        for _ in range(rng.randint(1, 4)):  # contention
            who, key, _token = rng.choice(held)
            other = rng.choice([w for w in workers if w != who])
            http[other].post("/v1/leases/acquire", json={"key": key, "ttl_ms": 30_000})
        clock.offset += rng.randint(15_000, 55_000)  # the work takes a while
        for who, key, token in held:
            if rng.random() < 0.04:
                body = {"key": key, "reason": "holder stuck, unblocking the pipeline"}
                ok(http["jo"].post("/v1/leases/force-release", json=body))
            elif rng.random() >= flaky.get(who, 0.1):
                ok(http[who].post("/v1/leases/release", json={"key": key, "token": token}))
        clock.offset += 60_000  # the rest expire
        time.sleep(0.06)  # the reaper records them
    clock.offset = 0
    time.sleep(0.3)
    for i, key in enumerate(keys[:7]):
        who = workers[i % len(workers)]
        ok(
            http[who].post(
                "/v1/leases/acquire",
                json={
                    "key": key,
                    "ttl_ms": rng.choice([45_000, 90_000, 300_000, 600_000]),
                    "task": f"run-{rng.randint(100, 999)}",
                },
            )
        )
    items = [
        ("login", "Fix the login page redirect loop", 0, ["web", "bug"]),
        ("reindex", "Reindex the search cluster", 1, ["ops"]),
        ("docs-api", "Document the fencing API", 2, ["docs"]),
        ("flaky-ci", "Quarantine the flaky CI job", 1, ["ci"]),
        ("q3-report", "Quarterly usage report", 3, ["reports"]),
        ("onboarding", "Onboarding checklist for agents", 2, ["docs"]),
        ("perf-budget", "Set a latency budget for /v1/leases", 2, ["perf"]),
    ]
    for item_id, title, priority, labels in items:
        ok(
            http["jo"].post(
                "/v1/items",
                json={"id": item_id, "title": title, "priority": priority, "labels": labels},
            )
        )
    claims = {
        "login": "reviewer/ana",
        "reindex": "build-agent-1",
        "flaky-ci": "build-agent-2",
        "q3-report": "etl-nightly",
    }
    for item_id, who in claims.items():
        ttl = 1_000 if item_id == "flaky-ci" else 600_000
        epoch = ok(http[who].post(f"/v1/items/{item_id}/claim", json={"ttl_ms": ttl}))["lease"][
            "token"
        ]
        if item_id == "login":
            ok(
                http[who].post(
                    "/v1/items/login/progress",
                    json={
                        "epoch": epoch,
                        "message": "reproduced; the cookie path is wrong",
                        "percent": 70,
                    },
                )
            )
        if item_id == "q3-report":
            ok(
                http[who].post(
                    "/v1/items/q3-report/complete", json={"epoch": epoch, "result": {"rows": 1204}}
                )
            )
    time.sleep(1.2)  # flaky-ci's claim lapses
