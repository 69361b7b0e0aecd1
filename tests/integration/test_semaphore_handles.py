"""``client.lease(key, slots=N)`` (blocking and async) against a real server on each backend:
each handle holds a slot of its own, the heartbeat renews that slot's key, leaving the block
releases it, and the N+1th handle is refused."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import tenure

TTL = 1.0


def _renewed(renewals: Any, before: int) -> None:
    """Block until ``renewals()`` (the handle's latest lease's count) passes ``before``."""
    give_up = time.monotonic() + 3 * TTL
    while renewals() <= before:
        assert time.monotonic() < give_up, "the heartbeat did not renew"
        time.sleep(0.002)


def test_each_handle_holds_and_renews_a_slot_of_its_own(live_server: Any) -> None:
    clients = [tenure.Client(live_server.url, token=live_server.token_for(n)) for n in "abc"]
    try:
        a, b, c = clients
        with a.lease("gpu", ttl=TTL, slots=2) as one, b.lease("gpu", ttl=TTL, slots=2) as two:
            assert (one.key, two.key) == ("gpu#slot/0", "gpu#slot/1")
            assert (one.lease.semaphore, one.lease.slot, one.lease.slots) == ("gpu", 0, 2)
            assert two.token > one.token
            _renewed(lambda: one.lease.renewals, 0)  # the heartbeat renews the slot's key
            one.check()
            assert a.get_lease("gpu#slot/0").renewals >= 1
            with pytest.raises(tenure.LeaseHeld) as full, c.lease("gpu", ttl=TTL, slots=2):
                pass
            assert sorted(full.value.holders or []) == ["a", "b"]
        assert a.get_lease("gpu#slot/0").state == "released"
        assert b.get_lease("gpu#slot/1").state == "released"
    finally:
        for client in clients:
            client.close()


def test_the_async_handle_holds_a_slot(live_server: Any) -> None:
    async def main() -> None:
        token = live_server.token_for("w")
        async with tenure.AsyncClient(live_server.url, token=token) as client:
            async with client.lease("pool", ttl=TTL, slots=3, task="crawl") as held:
                assert held.key == "pool#slot/0" and held.lease.slots == 3
                before = held.lease.renewals
                give_up = time.monotonic() + 3 * TTL
                while held.lease.renewals == before:
                    assert time.monotonic() < give_up, "the heartbeat did not renew"
                    await asyncio.sleep(0.002)
                held.check()
            lease = await client.get_lease("pool#slot/0")
            assert (lease.state, lease.task, lease.semaphore) == ("released", "crawl", "pool")

    asyncio.run(main())


def test_a_slot_lease_is_transferred_over_http_as_the_same_slot(live_server: Any) -> None:
    token = live_server.token_for("web")
    with (
        tenure.Client(live_server.url, token=token, session="r1") as r1,
        tenure.Client(live_server.url, token=token, session="r2") as r2,
        tenure.Client(live_server.url, token=live_server.token_for("ops")) as ops,
    ):
        mine = r1.acquire("gpu", ttl_ms=60_000, slots=2)
        theirs = ops.acquire("gpu", ttl_ms=60_000, slots=2)
        moved = r1.transfer(mine.key, mine.token, "r2")
        assert (moved.key, moved.session, moved.slot, moved.slots) == (mine.key, "r2", 0, 2)
        assert moved.token > theirs.token > mine.token  # the semaphore's next token
        assert r2.release(moved.key, moved.token).released
