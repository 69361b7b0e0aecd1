"""A waiting acquisition of the Python client interrupted (Ctrl-C, a cancelled task) just as its
grant arrived leaves nothing held: the client releases the lease nobody will use before the
interruption goes on. A lease the session held before it asked is kept.

The interruption is placed exactly: the transport passes the real reply, then raises.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tenure
from conftest import LiveServer
from tenure.client._call import Call, Reply
from tenure.client.aio import AsyncHttpTransport
from tenure.client.sync import HttpTransport

KEY = "deploy/prod"


class InterruptedOnReply:
    """The real transport; the first waiting acquisition's reply arrives, then ``interrupt``."""

    def __init__(self, real: Any, interrupt: BaseException) -> None:
        self.real, self.interrupt, self.fired = real, interrupt, False

    def _fire(self, call: Call[Any]) -> None:
        if call.op == "acquire" and call.wait_s and not self.fired:
            self.fired = True
            raise self.interrupt

    def send(self, call: Call[Any], timeout: float) -> Reply:
        reply: Reply = self.real.send(call, timeout)
        self._fire(call)
        return reply

    def close(self) -> None:
        self.real.close()


class AsyncInterruptedOnReply(InterruptedOnReply):
    async def send(self, call: Call[Any], timeout: float) -> Reply:  # type: ignore[override]
        reply: Reply = await self.real.send(call, timeout)
        self._fire(call)
        return reply

    async def close(self) -> None:  # type: ignore[override]
        await self.real.close()


def state_of(server: LiveServer) -> str:
    with tenure.Client(server.url, token=server.admin_token) as admin:
        return admin.get_lease(KEY).state


def test_ctrl_c_as_the_grant_arrives_releases_it(live_server: LiveServer) -> None:
    token = live_server.token_for("bo")
    transport = InterruptedOnReply(HttpTransport(live_server.url, token), KeyboardInterrupt())
    client = tenure.Client(live_server.url, token=token, transport=transport)
    with client, pytest.raises(KeyboardInterrupt):
        client.acquire(KEY, ttl_ms=600_000, wait_ms=5_000)
    assert state_of(live_server) == "released"


def test_a_cancelled_lease_block_releases_its_grant(live_server: LiveServer) -> None:
    token = live_server.token_for("bo")

    async def main() -> None:
        real = AsyncHttpTransport(live_server.url, token)
        transport = AsyncInterruptedOnReply(real, asyncio.CancelledError())
        async with tenure.AsyncClient(live_server.url, token=token, transport=transport) as c:
            with pytest.raises(asyncio.CancelledError):
                async with c.lease(KEY, ttl=600, wait=5):
                    pytest.fail("the block must not run")

    asyncio.run(main())
    assert state_of(live_server) == "released"


def test_a_lease_the_session_held_before_is_kept(live_server: LiveServer) -> None:
    token = live_server.token_for("bo")
    transport = InterruptedOnReply(HttpTransport(live_server.url, token), KeyboardInterrupt())
    with tenure.Client(live_server.url, token=token, transport=transport) as client:
        client.acquire(KEY, ttl_ms=600_000)
        with pytest.raises(KeyboardInterrupt):
            client.acquire(KEY, ttl_ms=600_000, wait_ms=5_000)  # renews it
    assert state_of(live_server) == "live"


def test_direct_mode_a_cancelled_acquisition_leaves_nothing_held(store_url: str) -> None:
    """In direct mode the try runs in a worker thread that a cancellation cannot stop: it ends
    (granted) before the cancellation goes on, and the grant is released."""

    async def main() -> str:
        async with tenure.AsyncClient(store_url, principal="bo") as client:
            task = asyncio.ensure_future(client.acquire(KEY, ttl_ms=600_000, wait_ms=5_000))
            await asyncio.sleep(0)  # the try is on its way to the worker thread
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return (await client.get_lease(KEY)).state

    assert asyncio.run(main()) == "released"


def test_a_semaphores_grant_interrupted_releases_its_slot(live_server: LiveServer) -> None:
    token = live_server.token_for("bo")

    def client(session: str) -> tenure.Client:
        transport = InterruptedOnReply(HttpTransport(live_server.url, token), KeyboardInterrupt())
        return tenure.Client(live_server.url, token=token, transport=transport, session=session)

    with client("s1") as fresh, pytest.raises(KeyboardInterrupt):
        fresh.acquire("gpu", ttl_ms=600_000, wait_ms=5_000, slots=2)
    with client("s2") as held:
        assert held.get_lease("gpu#slot/0").state == "released"
        kept = held.acquire("gpu", ttl_ms=600_000, slots=2)
        with pytest.raises(KeyboardInterrupt):  # the session's own slot, renewed: kept
            held.acquire("gpu", ttl_ms=600_000, wait_ms=5_000, slots=2)
        assert held.get_lease(kept.key).state == "live"
