"""The key's queue of waiting acquisitions and the departure of a waiter's client (no server:
``attempt`` is a fake that refuses with ``LeaseHeld`` until the test frees the key)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tenure.errors import LeaseHeld
from tenure.server.runtime.departure import Departure, Withdrawn, watching
from tenure.server.runtime.waiters import Waiters

KEY = "deploy/prod"
LONG_MS = 60_000


class Key:
    """A key held until :meth:`free`; each attempt is logged by the waiter's name."""

    def __init__(self) -> None:
        self.held = True
        self.tries: list[str] = []
        self.tried = asyncio.Event()

    def attempt(self, who: str) -> Any:
        async def run() -> str:
            self.tries.append(who)
            self.tried.set()
            if self.held:
                raise LeaseHeld("held", key=KEY, expires_at=None)
            self.held = True
            return who

        return run

    def free(self, waiters: Waiters) -> None:
        self.held = False
        waiters.notify(KEY)


async def until(check: Any) -> None:
    """Let the loop run until ``check()`` (at most a few thousand turns)."""
    for _ in range(5_000):
        if check():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the waiters never got there")


def test_a_departed_head_is_withdrawn_and_the_next_waiter_gets_the_key() -> None:
    async def main() -> None:
        waiters, key = Waiters(lambda: 0), Key()
        gone = Departure()
        first = asyncio.ensure_future(waiters.acquire(KEY, key.attempt("bo"), LONG_MS, gone))
        await until(lambda: key.tries == ["bo"])
        second = asyncio.ensure_future(waiters.acquire(KEY, key.attempt("cy"), LONG_MS))
        await until(lambda: waiters.waiting(KEY) == 2)
        # the head tries again every SLACK_S while the key stays held (sooner than a loaded
        # machine gets here), so count bo's tries up to its departure
        tried = key.tries.count("bo")
        gone.leave()
        with pytest.raises(Withdrawn):
            await first
        assert waiters.waiting(KEY) == 1  # bo's place in line is gone
        key.free(waiters)
        assert await asyncio.wait_for(second, 5) == "cy"
        assert key.tries.count("bo") == tried  # no try after bo left
        assert waiters.total() == 0

    asyncio.run(main())


def test_a_departed_waiter_behind_the_head_leaves_the_line() -> None:
    async def main() -> None:
        waiters, key = Waiters(lambda: 0), Key()
        head = asyncio.ensure_future(waiters.acquire(KEY, key.attempt("ann"), LONG_MS))
        await until(lambda: key.tries == ["ann"])
        gone = Departure()
        behind = asyncio.ensure_future(waiters.acquire(KEY, key.attempt("bo"), LONG_MS, gone))
        await until(lambda: waiters.waiting(KEY) == 2)
        gone.leave()
        with pytest.raises(Withdrawn):
            await behind
        assert waiters.waiting(KEY) == 1
        key.free(waiters)
        assert await asyncio.wait_for(head, 5) == "ann"
        assert key.tries.count("bo") == 0

    asyncio.run(main())


def test_an_attempt_under_way_is_not_interrupted() -> None:
    """The attempt may commit: the waiter returns its result, and the caller looks at the
    departure after it."""

    async def main() -> None:
        waiters, gone = Waiters(lambda: 0), Departure()
        started, finish = asyncio.Event(), asyncio.Event()

        async def attempt() -> str:
            started.set()
            await finish.wait()
            return "granted"

        waiting = asyncio.ensure_future(waiters.acquire(KEY, attempt, LONG_MS, gone))
        await started.wait()
        gone.leave()
        finish.set()
        assert await waiting == "granted"
        assert gone.gone

    asyncio.run(main())


def test_watching_marks_the_departure_on_http_disconnect() -> None:
    async def main() -> None:
        left = asyncio.Event()
        messages = [{"type": "http.request", "body": b"{}", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()  # a replayed body is skipped
            await left.wait()
            return {"type": "http.disconnect"}

        async with watching(receive) as departure:
            woken = asyncio.Event()
            with departure.waking(woken):
                await asyncio.sleep(0)
                assert not departure.gone
                left.set()
                await asyncio.wait_for(woken.wait(), 5)
            assert departure.gone

    asyncio.run(main())
