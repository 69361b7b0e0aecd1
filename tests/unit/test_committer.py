"""The group executor's committer thread: work runs in order, off the loop, and each result
reaches the loop; close runs what is queued first."""

from __future__ import annotations

import asyncio
import threading

from tenure.server.runtime.committer import Committer


def test_work_runs_in_order_in_its_thread_and_answers_on_the_loop() -> None:
    committer = Committer()
    ran: list[tuple[int, str]] = []
    answered: list[tuple[int, str]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        for i in range(50):

            def work(i: int = i) -> int:
                ran.append((i, threading.current_thread().name))
                return i

            def then(result: int) -> None:
                answered.append((result, threading.current_thread().name))
                if result == 49:
                    done.set()

            committer.run(loop, work, then)
        await asyncio.wait_for(done.wait(), 10)

    try:
        asyncio.run(main())
    finally:
        committer.close()
    assert [i for i, _ in ran] == list(range(50))
    assert {name for _, name in ran} == {"tenure-commit"}
    assert answered == [(i, threading.main_thread().name) for i in range(50)]


def test_close_runs_what_is_queued_then_stops() -> None:
    committer = Committer()
    ran: list[int] = []
    loop = asyncio.new_event_loop()
    try:
        for i in range(5):
            committer.run(loop, lambda i=i: ran.append(i), lambda _: None)
        committer.close()
    finally:
        loop.close()
    assert ran == [0, 1, 2, 3, 4]


def test_pending_tells_the_work_that_more_is_queued() -> None:
    committer = Committer()
    seen: list[bool] = []
    gate = threading.Event()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        first = lambda: (gate.wait(10), seen.append(committer.pending()))  # noqa: E731
        committer.run(loop, first, lambda _: None)
        committer.run(loop, lambda: seen.append(committer.pending()), lambda _: done.set())
        gate.set()
        await asyncio.wait_for(done.wait(), 10)

    try:
        asyncio.run(main())
    finally:
        committer.close()
    assert seen == [True, False]
