"""Chaos 2: a holder paused with ``SIGSTOP`` past its ttl while another takes over.

Holder A (a ``tenure.Client`` process) acquires a generic lease and writes the fenced register
with its token every 50 ms, renewing as it goes. It is ``SIGSTOP``ped for longer than its ttl;
meanwhile B acquires the key (a larger token) and writes. After ``SIGCONT``, A's next write is
refused with ``stale_token`` (and its renewal with ``lease_lost``); nothing A sent after B's
acquisition was accepted; the merged history of A and B passes the checker, and the server's
register holds B's write.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from _history import Worker, all_events, registers, tokens_for

import tenure
from checker import Recorder, check, check_durable, load
from procs import ServeAt

pytestmark = pytest.mark.slow

TTL_MS = 1000
KEY = "paused/register"


def test_a_paused_holder_cannot_write_after_a_takeover(
    server: ServeAt, store_url: str, tmp_path: Path
) -> None:
    tokens = tokens_for(store_url, "A", "B")
    logs = tmp_path / "history"
    logs.mkdir()
    a = Worker(
        "pausable", server.url, tokens["A"], "A", logs / "A.jsonl", f"--keys={KEY}",
        f"--ttl-ms={TTL_MS}", "--seconds=40",
    )  # fmt: skip
    try:
        held = int(a.expect("held").split()[1])
        time.sleep(0.3)  # a few writes go through
        a.kill(signal.SIGSTOP)
        stopped = time.monotonic()
        with tenure.Client(server.url, token=tokens["B"]) as client:
            b = Recorder(client, "B", logs / "B.jsonl", name="B")
            # B waits for A's lease to lapse (long-poll), then holds the key and writes.
            lease = b.acquire(KEY, 10_000, wait_ms=5_000)
            assert lease.token > held
            paused_for = time.monotonic() - stopped
            b.write(KEY, lease.token, ["B", 1], "B-1")
            a.kill(signal.SIGCONT)
            assert a.expect("refused", timeout=20) == "refused stale_token"
            assert a.expect("renew", timeout=20) == "renew lease_lost expired"
            assert a.proc.wait(20) == 0, a.stderr()
            b.write(KEY, lease.token, ["B", 2], "B-2")
    finally:
        a.close()

    history = load(logs)
    a_ops = [o for o in history if o.client == "A"]
    b_acquired = next(o for o in history if o.client == "B" and o.op == "acquire")
    # A's writes after B's acquisition: every one sent after it was acknowledged, and the one
    # refused. A SIGSTOP may land after a write's `sent` was recorded and before its request
    # left the process (tens of ms on a loaded machine): that write reaches the server after
    # B's acquisition, yet looks sent before it.
    late = [o for o in a_ops if o.op == "write" and (o.sent > b_acquired.received or o.ok is False)]
    assert late and all(o.ok is False and o.code == "stale_token" for o in late), late
    assert all(o.current_token == b_acquired.token for o in late)
    accepted = [o for o in a_ops if o.op == "write" and o.ok]
    assert accepted, "A wrote nothing before its pause"
    assert check(history) == []
    with server.http(tokens["B"]) as http:
        reg = registers(http, [KEY])
        assert reg[KEY]["value"] == ["B", 2] and reg[KEY]["token"] == b_acquired.token
        events = all_events(http, key=KEY)
        assert check_durable(history, events, reg) == []
        endings = [
            e["type"]
            for e in events
            if e["token"] == held and e["type"] in ("released", "expired", "force_released")
        ]
        assert endings == ["expired"], events
    print(
        f"A paused {paused_for:.2f} s (ttl {TTL_MS} ms): {len(accepted)} writes accepted before, "
        f"{len(late)} refused after B's token {b_acquired.token}"
    )
