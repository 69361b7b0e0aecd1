"""Chaos: a holder paused with ``SIGSTOP`` past its ttl, resumed after a takeover, never lands
a write through an HTTP service guarded by ``tenure.fence.fenced`` or through a Redis key
guarded by ``RedisFence`` -- in either arrival order:

- ``new-first``: the new holder writes before the paused one wakes up;
- ``stale-first``: the paused one wakes up before the new holder's first write. The new
  holder's token is admitted on acquire (``client.lease(key, fences=[...])``), or the service
  runs in checked mode and asks tenure.

Holder A is a separate process (``_fence_worker.py``) that writes every 50 ms and never looks
at its lease; holder B is this test.
"""

# No `from __future__ import annotations`: FastAPI must see the dependency named by a local.
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import redis
from _history import Worker, tokens_for
from fastapi import Body, Depends, FastAPI

import tenure
from procs import ServeAt
from redis_server import RedisServer
from tenure.fence import (
    Admitted,
    CheckedFence,
    FenceRefused,
    RedisFence,
    SqliteFence,
    fenced,
    problem_response,
)
from uvicorn_thread import Served

pytestmark = pytest.mark.slow

TTL_MS = 1000
KEY = "orders/17"
FENCE_WORKER = Path(__file__).with_name("_fence_worker.py")


class FenceWorker(Worker):
    """``_fence_worker.py GUARD URL TOKEN KEY TARGET``, its stdout lines collected."""

    def __init__(self, guard: str, url: str, token: str, target: str) -> None:
        self.name = f"A ({guard})"
        self.proc = subprocess.Popen(
            [sys.executable, str(FENCE_WORKER), guard, url, token, KEY, target,
             f"--ttl-ms={TTL_MS}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()


class Orders:
    """The guarded HTTP service: it records every write it accepts, in order."""

    def __init__(self, fence: Any) -> None:
        self.writes: list[tuple[int, Any]] = []
        app = FastAPI()
        app.add_exception_handler(FenceRefused, problem_response)
        guard = fenced("orders/{order_id}", fence=fence)

        @app.put("/orders/{order_id}")
        def put(
            order_id: str,
            body: Annotated[dict[str, Any], Body()],
            ok: Annotated[Admitted, Depends(guard)],
        ) -> str:
            self.writes.append((ok.token, body))
            return "stored"

        self.served = Served(app)


@pytest.fixture
def redis_srv() -> Iterator[RedisServer]:
    srv = RedisServer()
    try:
        yield srv
    finally:
        srv.stop()


def takeover(client: tenure.Client, fences: list[Any]) -> tenure.Lease:
    """B waits (long-poll) for A's lease to lapse, then holds the key."""
    lease = client.acquire(KEY, ttl_ms=30_000, wait_ms=10_000, fences=fences)
    assert lease.state == "live"
    return lease


def resume_and_expect_refusal(a: Worker, landed: int) -> None:
    """A wakes up: the first thing it reports is the refusal. ``landed``: how many of A's
    writes the store holds from before the takeover; A may have written one of them just
    before it was paused and report it only now (``wrote N``, N <= landed): those are skipped,
    any other write reported is one that landed after the takeover."""
    a.kill(signal.SIGCONT)
    line = a.expect("", timeout=30)
    while line.startswith("wrote ") and int(line.split()[1]) <= landed:
        line = a.expect("", timeout=30)
    assert line == "refused stale_token", f"A landed a write after the takeover: {a.seen}"
    assert a.proc.wait(20) == 0, a.stderr()


@pytest.mark.parametrize("order", ["new-first", "stale-first", "stale-first-checked"])
def test_http_service(server: ServeAt, store_url: str, tmp_path: Path, order: str) -> None:
    tokens = tokens_for(store_url, "A", "B", "orders-service")
    store = SqliteFence(tmp_path / "fence.sqlite")
    checked = order.endswith("checked")
    reader = tenure.Client(server.url, token=tokens["orders-service"])
    orders = Orders(CheckedFence(reader, store, cache=0.1) if checked else store)
    a = FenceWorker("http", server.url, tokens["A"], orders.served.url)
    try:
        held = int(a.expect("held").split()[1])
        a.expect("wrote")
        a.kill(signal.SIGSTOP)
        with tenure.Client(server.url, token=tokens["B"]) as b:
            lease = takeover(b, [] if order != "stale-first" else [store])
            assert lease.token > held
            mark = len(orders.writes)
            if order == "new-first":
                put = orders.served.http.put(
                    f"/{KEY}",
                    json={"by": "B"},
                    headers={"Tenure-Token": str(lease.token), "Tenure-Key": KEY},
                )
                assert put.status_code == 200
            resume_and_expect_refusal(a, mark)
            assert all(token == lease.token for token, _ in orders.writes[mark:])
            put = orders.served.http.put(
                f"/{KEY}",
                json={"by": "B", "n": 2},
                headers={"Tenure-Token": str(lease.token), "Tenure-Key": KEY},
            )
            assert put.status_code == 200
        assert [t for t, _ in orders.writes[:mark]] == [held] * mark and mark >= 1
        assert orders.writes[-1] == (lease.token, {"by": "B", "n": 2})
    finally:
        a.close()
        orders.served.stop()
        reader.close()


@pytest.mark.parametrize("order", ["new-first", "stale-first"])
def test_redis_key(server: ServeAt, store_url: str, redis_srv: RedisServer, order: str) -> None:
    tokens = tokens_for(store_url, "A", "B")
    r = redis_srv.client()
    fence = RedisFence(r)
    a = FenceWorker("redis", server.url, tokens["A"], redis_srv.url)
    try:
        held = int(a.expect("held").split()[1])
        a.expect("wrote")
        a.kill(signal.SIGSTOP)
        with tenure.Client(server.url, token=tokens["B"]) as b:
            lease = takeover(b, [] if order == "new-first" else [fence])
            assert lease.token > held and fence.current(KEY) == (
                held if order == "new-first" else lease.token
            )
            before = r.get("value:" + KEY)
            assert before is not None and before.startswith(b"A-")
            if order == "new-first":
                fence.set(KEY, lease.token, "value:" + KEY, "B-1")
            resume_and_expect_refusal(a, int(before[2:]))
            after = r.get("value:" + KEY)
            assert after == (b"B-1" if order == "new-first" else before)
            fence.set(KEY, lease.token, "value:" + KEY, "B-2")
        assert r.get("value:" + KEY) == b"B-2" and fence.current(KEY) == lease.token
    finally:
        a.close()


def test_the_worker_is_not_refused_without_a_takeover(
    server: ServeAt, store_url: str, redis_srv: RedisServer
) -> None:
    """The control: the same holder, not paused, writes on (so a refusal above means the
    takeover, not a broken worker)."""
    tokens = tokens_for(store_url, "A")
    a = FenceWorker("redis", server.url, tokens["A"], redis_srv.url)
    try:
        a.expect("held")
        for _ in range(5):
            a.expect("wrote")
        assert redis.Redis.from_url(redis_srv.url).get("value:" + KEY) is not None
    finally:
        a.close()
