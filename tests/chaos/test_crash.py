"""``kill -9`` of a holder at any moment: nothing acknowledged is lost, nobody cleans up.

SPEC section 2, invariants 2, 3 and 11, and the bar of the preamble: a child process acquires and
releases in a loop, printing every token the moment ``acquire`` returned it; it is ``SIGKILL``ed
at a random point (possibly mid-transaction, possibly while holding). The parent then reopens the
store: every printed token is in the event log, and the next acquisition gets a larger token,
after at most one ttl of waiting and without any cleanup. A second test kills a holder that is
just sitting on its lease: the lease survives the kill, fences, blocks others until its deadline,
and then simply stops being live.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tenure

pytestmark = pytest.mark.slow

WORKERS = Path(__file__).with_name("_workers.py")
KEY = "crash/one-key"
ROUNDS = 3
LOOP_TTL_MS = 1000  # the policy's minimum: a killed holder blocks the key this long at most
HOLD_TTL_MS = 2000


class Child:
    """A worker process whose stdout lines are collected by a thread (reads never block us)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKERS), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def read(self, count: int, timeout: float) -> list[str]:
        """The next ``count`` lines; fails if the child dies or is too slow."""
        deadline = time.monotonic() + timeout
        out: list[str] = []
        while len(out) < count:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"child printed {len(out)} of {count} lines in {timeout} s")
            if line is None:
                pytest.fail(f"child exited {self.proc.wait()}: {self._stderr()}")
            out.append(line)
        return out

    def kill(self) -> list[str]:
        """SIGKILL the child; returns every line it printed that was not read yet."""
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(10) == -signal.SIGKILL
        self._reader.join(10)
        rest = []
        while (line := self.lines.get_nowait()) is not None:
            rest.append(line)
        return rest

    def _stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-2000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def acquired_tokens(service: tenure.Service, key: str) -> list[int]:
    tokens: list[int] = []
    after = 0
    while page := service.events(after=after, key=key, type="acquired", limit=1000):
        tokens.extend(e.token for e in page if e.token is not None)
        after = page[-1].id
    return tokens


def test_kill_9_mid_loop_loses_no_token(backend: str, store_url: str) -> None:
    seed = random.randrange(2**32)
    rnd = random.Random(seed)
    issued_before = 0  # the largest token anyone saw so far
    for round_ in range(ROUNDS):
        looper = f"looper-{round_}"
        child = Child("loop", store_url, KEY, looper, f"--ttl-ms={LOOP_TTL_MS}")
        try:
            printed = child.read(rnd.randint(100, 250), timeout=20)
            time.sleep(rnd.uniform(0, 0.005))  # land the kill anywhere in the cycle
            printed += child.kill()
        finally:
            child.close()
        tokens = [int(line) for line in printed]
        context = f"seed {seed}, round {round_}"
        assert tokens == sorted(set(tokens)), context
        assert tokens[0] > issued_before, context

        store = tenure.open_store(store_url)  # a new process would see what this one sees
        try:
            service = tenure.Service(store)
            # Nothing acknowledged is lost: every printed token was committed.
            committed = acquired_tokens(service, KEY)
            assert set(tokens) <= set(committed), context
            assert len(committed) == len(set(committed)), context
            # The child may have died holding the key: wait out its ttl, nothing else.
            give_up = time.monotonic() + LOOP_TTL_MS / 1000 + 5
            waited = False
            while True:
                try:
                    lease = service.acquire("checker", KEY, ttl_ms=LOOP_TTL_MS)
                    break
                except tenure.LeaseHeld as held:
                    assert held.holder == looper, context
                    assert held.token is not None and held.token >= tokens[-1], context
                    assert time.monotonic() < give_up, f"{context}: the dead lease never lapsed"
                    waited = True
                    time.sleep(0.05)
            assert lease.token > max(tokens), context
            assert lease.token > max(committed), context
            assert service.release("checker", KEY, lease.token).released
            issued_before = lease.token
            print(
                f"{context}: {len(tokens)} tokens printed, last {tokens[-1]}, "
                f"{'killed holding' if waited else 'killed between leases'}, next {lease.token}"
            )
        finally:
            store.close()


def test_kill_9_while_holding_keeps_the_lease_until_its_ttl(backend: str, store_url: str) -> None:
    child = Child("hold", store_url, KEY, "sitter", f"--ttl-ms={HOLD_TTL_MS}")
    try:
        held = json.loads(child.read(1, timeout=20)[0])
        assert child.kill() == []
    finally:
        child.close()
    token, deadline = held["token"], held["expires_at"]

    store = tenure.open_store(store_url)
    try:
        service = tenure.Service(store)
        # Durable: the dead holder's lease is still there, still fences, still blocks others.
        lease = service.get(KEY)
        assert (lease.state, lease.holder, lease.token) == ("live", "sitter", token)
        assert lease.expires_at == deadline
        assert service.read(KEY).value == {"holder": "sitter", "token": token}
        with pytest.raises(tenure.LeaseHeld) as refused:
            service.acquire("successor", KEY, ttl_ms=1000)
        assert (refused.value.holder, refused.value.token) == ("sitter", token)
        assert refused.value.expires_at == deadline
        assert [lease.key for lease in service.list(holder="sitter")] == [KEY]

        # Recovery is the passage of time: no reaper, no release, no operator.
        while (left := deadline - store.now_ms()) >= 0:
            time.sleep(min(left + 1, 200) / 1000)
        assert service.get(KEY).state == "expired"
        assert service.list(holder="sitter") == []
        successor = service.acquire("successor", KEY, ttl_ms=1000)
        assert successor.token > token

        # The old token is dead for fenced writes now that someone acquired since.
        with pytest.raises(tenure.StaleToken):
            service.write("sitter", KEY, token, "late")
        service.write("successor", KEY, successor.token, "fresh")
        assert service.read(KEY).token == successor.token

        # The lease ended exactly one way, recorded once: expired.
        endings = [
            e.type
            for e in service.events(key=KEY, limit=1000)
            if e.token == token and e.type in ("released", "expired", "force_released")
        ]
        assert endings == ["expired"]
    finally:
        store.close()
