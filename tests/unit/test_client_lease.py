"""Lease handles against an in-memory fake server: heartbeat, deadline, loss, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import pytest

import tenure
from tenure.client._transport import RetryPolicy
from tenure.client._wire import Call, Reply, TransportError
from tenure.core.models import Lease

FAST = RetryPolicy(attempts=3, budget=1.0, backoff=0.001, max_backoff=0.002)


class FakeLeases:
    """Answers acquire/renew/release for one principal; can be down, hang, slow or hostile."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down = False  # connection refused
        self.hang = False  # the request is sent and never answered (until the timeout)
        self.delay = 0.0  # seconds before each successful reply
        self.acquire_delay = 0.0
        self.verdict: tenure.TenureError | None = None  # what renew answers instead
        self.token = 0
        self.ttl_ms = 0
        self.log: list[tuple[str, float, float]] = []  # (op, sent, replied) of answered calls

    def before(self, call: Call[Any]) -> float:
        """Seconds to wait before answering, or raise the failure of the moment."""
        if self.down:
            raise TransportError("connection refused", sent=False)
        return self.acquire_delay if call.op == "acquire" else self.delay

    def answer(self, call: Call[Any], sent: float) -> Reply:
        body = call.body or {}
        with self.lock:
            if call.op == "renew" and self.verdict is not None:
                return Reply(self.verdict.status, self.verdict.to_problem())
            if call.op == "acquire":
                self.token += 1
                self.ttl_ms = body.get("ttl_ms", 30_000)
            self.log.append((call.op, sent, time.monotonic()))
            if call.op == "release":
                return Reply(200, {"released": True, "lease": None})
            lease = Lease(call.args()["key"], "me", None, self.token, self.ttl_ms, 0, 0, 1, 0)
            return Reply(200, {"lease": lease.to_dict()})

    def ops(self, op: str) -> list[tuple[str, float, float]]:
        with self.lock:
            return [entry for entry in self.log if entry[0] == op]

    # sync transport
    def send(self, call: Call[Any], timeout: float) -> Reply:
        sent = time.monotonic()
        delay = self.before(call)
        if self.hang:
            time.sleep(timeout)
            raise TransportError("read timeout", sent=True)
        time.sleep(delay)
        return self.answer(call, sent)

    def close(self) -> None:
        pass


class AsyncFakeLeases(FakeLeases):
    async def send(self, call: Call[Any], timeout: float) -> Reply:  # type: ignore[override]
        sent = time.monotonic()
        delay = self.before(call)
        if self.hang:
            if call.op != "renew":
                raise TransportError("connection refused", sent=False)
            await asyncio.sleep(3600)  # the heartbeat's own deadline must cut this short
        await asyncio.sleep(delay)
        return self.answer(call, sent)

    async def close(self) -> None:  # type: ignore[override]
        pass


def sync_client(fake: FakeLeases) -> tenure.Client:
    return tenure.Client("http://fake", token="t", retry=FAST, transport=fake)


def async_client(fake: AsyncFakeLeases) -> tenure.AsyncClient:
    return tenure.AsyncClient("http://fake", token="t", retry=FAST, transport=fake)


# sync -----------------------------------------------------------------------------------------
def test_heartbeat_renews_at_a_third_of_the_ttl_and_exit_releases() -> None:
    fake = FakeLeases()
    with sync_client(fake).lease("k", ttl=0.3) as lease:
        assert lease.token == 1 and lease.key == "k" and lease.lease.ttl_ms == 300
        time.sleep(0.55)
        lease.check()
        assert not lease.lost and lease.lost_reason is None
    assert 3 <= len(fake.ops("renew")) <= 6
    assert len(fake.ops("release")) == 1
    assert lease.lease.token == 1
    with pytest.raises(tenure.LeaseLost) as raised:
        lease.check()
    assert raised.value.reason == "released"


def test_a_server_verdict_loses_the_lease_at_once() -> None:
    fake = FakeLeases()
    called: list[Any] = []
    with sync_client(fake).lease("k", ttl=0.3, on_lost=called.append) as lease:
        fake.verdict = tenure.LeaseLost("gone", key="k", reason="force_released", token=1)
        assert lease.wait_lost(1.0)
        assert lease.lost and lease.lost_reason == "force_released"
        with pytest.raises(tenure.LeaseLost) as raised:
            lease.check()
        assert raised.value.reason == "force_released" and raised.value.token == 1
        time.sleep(0.15)
    assert called == [lease]
    assert fake.ops("release") == []  # nothing left to release


@pytest.mark.parametrize(
    "verdict",
    [
        tenure.NotHolder(holder="bo"),
        tenure.StaleToken(current_token=9),
        tenure.NotFound(what="lease"),
    ],
    ids=lambda e: e.code,
)
def test_other_verdicts_name_themselves(verdict: tenure.TenureError) -> None:
    fake = FakeLeases()
    with sync_client(fake).lease("k", ttl=0.3) as lease:
        fake.verdict = verdict
        assert lease.wait_lost(1.0)
        assert lease.lost_reason == verdict.code


def test_an_outage_shorter_than_the_ttl_is_ridden_out() -> None:
    fake = FakeLeases()
    with sync_client(fake).lease("k", ttl=0.6) as lease:
        time.sleep(0.25)
        fake.down = True
        time.sleep(0.3)
        fake.down = False
        time.sleep(0.4)
        lease.check()
    assert len(fake.ops("renew")) >= 3


def test_the_deadline_counts_from_when_the_last_renewal_was_sent() -> None:
    fake = FakeLeases()
    fake.delay = 0.15  # a slow reply must not move the deadline
    ttl = 0.5
    with sync_client(fake).lease("k", ttl=ttl) as lease:
        time.sleep(0.2)
        fake.hang = True  # sent, never answered: each try times out at the deadline
        assert lease.wait_lost(2.0)
        lost_at = time.monotonic()
        _, sent, replied = fake.ops("renew")[-1]
        assert replied - sent >= 0.15
        assert sent + ttl - 0.03 <= lost_at <= sent + ttl + 0.15
        assert lost_at < replied + ttl - 0.075
        assert lease.lost_reason == "deadline"
        with pytest.raises(tenure.LeaseLost, match="deadline") as raised:
            lease.check()
        assert raised.value.reason == "deadline"
        fake.hang, fake.down = False, True  # the release on exit fails: logged, not raised


def test_leaving_a_block_that_never_noticed_the_loss_raises() -> None:
    fake = FakeLeases()
    with pytest.raises(tenure.LeaseLost) as raised, sync_client(fake).lease("k", ttl=0.3):
        fake.verdict = tenure.LeaseLost(reason="expired")
        time.sleep(0.4)
    assert raised.value.reason == "expired"


def test_the_blocks_own_exception_is_never_masked() -> None:
    fake = FakeLeases()
    with (
        pytest.raises(ValueError, match="boom") as raised,
        sync_client(fake).lease("k", ttl=0.3),
    ):
        fake.verdict = tenure.LeaseLost(reason="taken_over")
        time.sleep(0.4)
        fake.down = True
        raise ValueError("boom")
    assert any("taken_over" in note for note in raised.value.__notes__)


def test_a_slow_acquisition_is_confirmed_with_a_renewal_at_once() -> None:
    fake = FakeLeases()
    fake.acquire_delay = 0.15  # more than ttl/3, as after a long poll
    with sync_client(fake).lease("k", ttl=0.3, wait=1.0) as lease:
        (_, _, acquired), (_, renew_sent, _) = fake.ops("acquire")[0], fake.ops("renew")[0]
        assert renew_sent - acquired < 0.05
        assert lease.deadline == pytest.approx(renew_sent + 0.3, abs=0.01)


def test_explicit_release_stops_the_heartbeat() -> None:
    fake = FakeLeases()
    with sync_client(fake).lease("k", ttl=0.3) as lease:
        result = lease.release()
        assert result.released
        renewals = len(fake.ops("renew"))
        time.sleep(0.25)
        assert len(fake.ops("renew")) == renewals
        with pytest.raises(tenure.LeaseLost):
            lease.check()
    assert len(fake.ops("release")) == 1


def test_handles_check_their_arguments() -> None:
    client = sync_client(FakeLeases())
    with pytest.raises(tenure.InvalidRequest) as raised:
        client.lease("k", ttl=0)
    assert raised.value.field == "ttl"
    with pytest.raises(tenure.InvalidRequest):
        client.lease("k", wait=-1)
    with pytest.raises(RuntimeError):
        client.lease("k").check()


# async ----------------------------------------------------------------------------------------
def test_async_loss_cancels_the_block_and_raises_lease_lost() -> None:
    async def main() -> None:
        fake = AsyncFakeLeases()
        client = async_client(fake)
        start = time.monotonic()
        with pytest.raises(tenure.LeaseLost) as raised:
            async with client.lease("k", ttl=0.3) as lease:
                fake.verdict = tenure.LeaseLost(reason="force_released", token=1)
                await asyncio.sleep(5)
        assert time.monotonic() - start < 1.0
        assert raised.value.reason == "force_released"
        assert isinstance(raised.value.__cause__, asyncio.CancelledError)
        assert lease.lost
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0

    asyncio.run(main())


def test_async_heartbeat_renews_and_releases() -> None:
    async def main() -> None:
        fake = AsyncFakeLeases()
        async with async_client(fake) as client, client.lease("k", ttl=0.3) as lease:
            await asyncio.sleep(0.45)
            lease.check()
        assert len(fake.ops("renew")) >= 3
        assert len(fake.ops("release")) == 1

    asyncio.run(main())


def test_async_a_hung_renewal_cannot_outlive_the_deadline() -> None:
    async def main() -> None:
        fake = AsyncFakeLeases()
        client = async_client(fake)
        lost: list[float] = []
        with pytest.raises(tenure.LeaseLost) as raised:
            async with client.lease("k", ttl=0.3, on_lost=lambda _: lost.append(time.monotonic())):
                fake.hang = True
                await asyncio.sleep(5)
        sent = fake.ops("renew")[-1][1] if fake.ops("renew") else fake.ops("acquire")[-1][1]
        assert sent + 0.3 - 0.03 <= lost[0] <= sent + 0.3 + 0.15
        assert raised.value.reason == "deadline"

    asyncio.run(main())


def test_async_an_outer_cancellation_is_never_swallowed() -> None:
    async def holder(client: tenure.AsyncClient, started: asyncio.Event) -> None:
        async with client.lease("k", ttl=0.3):
            started.set()
            await asyncio.sleep(5)

    async def main() -> None:
        fake = AsyncFakeLeases()
        client = async_client(fake)
        started = asyncio.Event()
        task = asyncio.create_task(holder(client, started))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(fake.ops("release")) == 1

    asyncio.run(main())


def test_async_outer_cancellation_wins_over_a_loss_at_the_same_time() -> None:
    async def main() -> None:
        fake = AsyncFakeLeases()
        client = async_client(fake)

        async def holder() -> None:
            def lost_and_cancelled(lease: tenure.AsyncLeaseHandle) -> None:
                task.cancel()  # someone else cancels the task as well

            async with client.lease("k", ttl=0.3, on_lost=lost_and_cancelled):
                fake.verdict = tenure.LeaseLost(reason="expired")
                await asyncio.sleep(5)

        task = asyncio.create_task(holder())
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_async_a_block_that_swallows_the_cancellation_still_hears_of_the_loss() -> None:
    async def main() -> None:
        fake = AsyncFakeLeases()
        client = async_client(fake)
        with pytest.raises(tenure.LeaseLost):
            async with client.lease("k", ttl=0.3):
                fake.verdict = tenure.LeaseLost(reason="expired")
                # bad manners, but the loss is still reported on the way out
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(5)

    asyncio.run(main())


def test_async_on_lost_may_be_a_coroutine() -> None:
    async def main() -> None:
        fake = AsyncFakeLeases()
        client = async_client(fake)
        seen: list[str | None] = []

        async def on_lost(lease: tenure.AsyncLeaseHandle) -> None:
            seen.append(lease.lost_reason)

        with pytest.raises(tenure.LeaseLost):
            async with client.lease("k", ttl=0.3, on_lost=on_lost):
                fake.verdict = tenure.LeaseLost(reason="expired")
                await asyncio.sleep(5)
        await asyncio.sleep(0.01)
        assert seen == ["expired"]

    asyncio.run(main())
