"""A paused owner can never complete: the scenario of issue 4, end to end with real processes.

Worker A claims an item and is SIGSTOPped past its TTL; B takes the item over; A is SIGCONTed
and tries ``progress`` and ``complete`` with its old epoch: both are refused with
``stale_token``. B completes. The history reads claimed(A) → taken_over(B) → completed(B).
Then two processes race to claim, and to dispatch, one item: exactly one wins.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tenure
from procs import Serve
from tenure.service.principals import Principals

WORKER = Path(__file__).with_name("_item_worker.py")
TTL_MS = 1000


def token_for(db: str, name: str, roles: tuple[str, ...] = ()) -> str:
    store = tenure.open_store(db)
    try:
        return Principals(store).bootstrap(name, "agent", roles).token
    finally:
        store.close()


@pytest.fixture
def served(store_url: str) -> Iterator[tuple[Serve, str]]:
    server = Serve(store_url)
    try:
        yield server, store_url
    finally:
        server.kill()


def test_a_paused_owner_cannot_progress_or_complete(
    served: tuple[Serve, str], tmp_path: Path
) -> None:
    server, db = served
    root, a, b = (token_for(db, n, r) for n, r in (("root", ("admin",)), ("A", ()), ("B", ())))
    with server.http(root) as http:
        item = http.post("/v1/items", json={"title": "nightly report"}).json()["item"]["id"]
    go = tmp_path / "go"
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), server.url, a, item, str(TTL_MS), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "claimed 1"
        os.kill(worker.pid, signal.SIGSTOP)
        time.sleep(TTL_MS / 1000 + 0.3)  # A's lease lapses while it is paused
        with server.http(b) as http:
            refused = http.post(f"/v1/items/{item}/claim", json={})
            assert refused.status_code == 409
            assert refused.json()["code"] == "assigned_to_other"
            assert refused.json()["assignee"] == "A"
            took = http.post(
                f"/v1/items/{item}/claim", json={"takeover": True, "reason": "A stopped answering"}
            )
            assert took.status_code == 200, took.text
            assert took.json()["lease"]["token"] == 2
        go.touch()
        os.kill(worker.pid, signal.SIGCONT)
        out, err = worker.communicate(timeout=30)
        assert worker.returncode == 0, err
    finally:
        if worker.poll() is None:
            os.kill(worker.pid, signal.SIGCONT)
            worker.kill()
            worker.communicate()
    replies = [json.loads(line) for line in out.splitlines()]
    assert [(r["verb"], r["status"], r["body"]["code"]) for r in replies] == [
        ("progress", 409, "stale_token"),
        ("complete", 409, "stale_token"),
    ]
    assert all(r["body"]["current_token"] == 2 and r["body"]["holder"] == "B" for r in replies)
    with server.http(b) as http:
        done = http.post(f"/v1/items/{item}/complete", json={"epoch": 2, "result": {"by": "B"}})
        assert done.status_code == 200, done.text
        view = http.get(f"/v1/items/{item}").json()
    assert view["item"]["status"] == "done" and view["item"]["result"] == {"by": "B"}
    history = [(t["reason"], t["from"], t["to"], t["epoch"]) for t in view["transfers"]]
    assert history == [
        ("claimed", None, "A", 1),
        ("taken_over", "A", "B", 2),
        ("completed", "B", None, 2),
    ]


def race(server: Serve, tokens: list[str], path: str, body: dict[str, object]) -> list[dict]:
    """Several processes post at once; their replies (status and body)."""
    script = (
        "import httpx, json, sys\n"
        "url, token, path, body = sys.argv[1:5]\n"
        "r = httpx.post(url + path, json=json.loads(body), timeout=30,\n"
        "               headers={'Authorization': 'Bearer ' + token})\n"
        "print(json.dumps({'status': r.status_code, 'body': r.json()}))\n"
    )

    def one(token: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", script, server.url, token, path, json.dumps(body)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return dict(json.loads(done.stdout))

    with ThreadPoolExecutor(len(tokens)) as pool:
        return list(pool.map(one, tokens))


@pytest.mark.parametrize("verb", ["claim", "dispatch"])
def test_racing_processes_one_claim_or_dispatch_wins(served: tuple[Serve, str], verb: str) -> None:
    server, db = served
    root = token_for(db, "root", ("admin",))
    names = [f"w{i}" for i in range(4)]
    tokens = [token_for(db, n) for n in names]
    with server.http(root) as http:
        item = http.post("/v1/items", json={"title": "once only"}).json()["item"]["id"]
    replies = race(server, tokens, f"/v1/items/{item}/{verb}", {"ttl_ms": 30_000})
    winners = [r for r in replies if r["status"] == 200]
    losers = [r for r in replies if r["status"] != 200]
    assert len(winners) == 1, replies
    holder = winners[0]["body"]["lease"]["holder"]
    assert all(r["status"] == 409 and r["body"]["code"] == "lease_held" for r in losers)
    assert {r["body"]["holder"] for r in losers} == {holder}
    assert {r["body"]["expires_at"] for r in losers} == {winners[0]["body"]["lease"]["expires_at"]}
    if verb == "dispatch":
        store = tenure.open_store(db)
        try:
            agents = [p.name for p in store.list_principals() if "/" in p.name]
        finally:
            store.close()
        assert agents == [holder]  # a double dispatch never launches two agents
