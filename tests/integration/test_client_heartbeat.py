"""Lease handles against a real server on each backend: heartbeats, outages, loss, waiting.

TTLs are 1 s (the policy's minimum), so the heartbeat renews every ~0.33 s.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import tenure

TTL = 1.0


def wait_for_renewal(lease: tenure.LeaseHandle | tenure.AsyncLeaseHandle) -> float:
    """Block until the heartbeat renewed once more; the instant the renewal was seen."""
    before = lease.lease.renewals
    give_up = time.monotonic() + 3 * TTL
    while lease.lease.renewals == before:
        assert time.monotonic() < give_up, "the heartbeat did not renew"
        time.sleep(0.002)
    return time.monotonic()


@pytest.fixture
def client(live_server: Any) -> Any:
    token = live_server.token_for("worker")
    with tenure.Client(live_server.url, token=token) as client:
        yield client


def test_a_lease_held_for_several_ttls_stays_live(live_server: Any, client: tenure.Client) -> None:
    with client.lease("jobs/long", ttl=TTL, task="run-1", meta={"a": 1}) as lease:
        first = lease.token
        time.sleep(3.2 * TTL)
        lease.check()
        assert not lease.lost and lease.token == first
        server = client.get_lease("jobs/long")
        assert server.state == "live" and server.token == first and server.renewals >= 7
        assert lease.expires_at == lease.lease.expires_at >= server.expires_at - 1000
        assert lease.lease.task == "run-1" and lease.lease.meta == {"a": 1}
    after = client.get_lease("jobs/long")
    assert after.state == "released" and after.token == first
    assert [e.type for e in client.events(key="jobs/long")] == ["acquired", "released"]


def test_an_outage_shorter_than_the_ttl_does_not_lose_the_lease(
    live_server: Any, client: tenure.Client
) -> None:
    ttl = 4 * TTL  # a restart of the server on a loaded machine can take over a second itself
    with client.lease("jobs/outage", ttl=ttl) as lease:
        wait_for_renewal(lease)
        down = time.monotonic()
        live_server.stop()
        time.sleep(max(0.0, 0.4 * ttl - (time.monotonic() - down)))
        live_server.start()
        time.sleep(1.2 * ttl)
        lease.check()
        assert client.get_lease("jobs/outage").state == "live"
    assert client.get_lease("jobs/outage").state == "released"


def test_a_longer_outage_loses_the_lease_at_the_client_deadline(
    live_server: Any, client: tenure.Client
) -> None:
    lost: list[float] = []
    with client.lease(
        "jobs/down", ttl=TTL, on_lost=lambda _: lost.append(time.monotonic())
    ) as lease:
        wait_for_renewal(lease)
        down = time.monotonic()
        live_server.stop()
        time.sleep(max(0.0, down + 0.6 * TTL - time.monotonic()))
        assert not lease.lost  # the deadline is a full ttl after the last renewal was sent
        lease.check()
        assert lease.wait_lost(down + TTL + 0.5 - time.monotonic())
        assert down + 0.8 * TTL <= time.monotonic() <= down + TTL + 0.5
        assert lost and down + 0.8 * TTL <= lost[0] <= down + TTL + 0.5
        assert lease.lost and lease.lost_reason == "deadline"
        with pytest.raises(tenure.LeaseLost) as raised:
            lease.check()
        assert raised.value.reason == "deadline" and raised.value.token == lease.token
    live_server.start()
    # the client gave up no later than the server: by now the server expired the lease too
    assert client.get_lease("jobs/down").state == "expired"


def test_a_lease_waits_for_a_held_key(live_server: Any, client: tenure.Client) -> None:
    other = tenure.Client(live_server.url, token=live_server.token_for("other"))
    held = other.acquire("jobs/shared", ttl_ms=1000)
    start = time.monotonic()
    with client.lease("jobs/shared", ttl=TTL, wait=5.0) as lease:
        waited = time.monotonic() - start
        assert 0.5 <= waited <= 3.0
        assert lease.token == held.token + 1
        # the acquisition took longer than ttl/3, so it was confirmed by a renewal at once
        assert lease.lease.renewals == 1
        assert lease.deadline > time.monotonic() + 0.5 * TTL
    with (
        pytest.raises(tenure.LeaseHeld) as raised,
        other.lease("jobs/held", ttl=TTL),
        client.lease("jobs/held", ttl=TTL, wait=0.2),
    ):
        pass
    assert raised.value.holder == "other"
    other.close()


def test_a_forced_release_is_heard_by_the_heartbeat(
    live_server: Any, client: tenure.Client
) -> None:
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    with client.lease("jobs/forced", ttl=TTL) as lease:
        admin.force_release("jobs/forced", "operator says so")
        assert lease.wait_lost(TTL)
        assert lease.lost_reason == "force_released"
        with pytest.raises(tenure.LeaseLost) as raised:
            lease.check()
        assert raised.value.reason == "force_released"
    admin.close()


def test_async_block_is_cancelled_when_the_lease_is_lost(live_server: Any) -> None:
    token = live_server.token_for("async-worker")

    async def main() -> None:
        async with (
            tenure.AsyncClient(live_server.url, token=token) as client,
            tenure.AsyncClient(live_server.url, token=live_server.admin_token) as admin,
        ):
            reached: list[str] = []
            with pytest.raises(tenure.LeaseLost) as raised:
                async with client.lease("jobs/async", ttl=TTL) as lease:
                    await admin.force_release("jobs/async", "take it away")
                    await asyncio.sleep(5 * TTL)
                    reached.append("end of block")
            assert reached == []
            assert raised.value.reason == "force_released"
            assert lease.lost and lease.lost_reason == "force_released"
            task = asyncio.current_task()
            assert task is not None and task.cancelling() == 0

            # an outage: cancelled at the client's deadline, not before
            lost: list[float] = []
            with pytest.raises(tenure.LeaseLost) as raised:
                async with client.lease(
                    "jobs/async-down", ttl=TTL, on_lost=lambda _: lost.append(time.monotonic())
                ) as lease:
                    await asyncio.to_thread(wait_for_renewal, lease)
                    down = time.monotonic()
                    await asyncio.to_thread(live_server.stop)
                    await asyncio.sleep(5 * TTL)
            assert down + 0.8 * TTL <= lost[0] <= down + TTL + 0.5
            assert raised.value.reason == "deadline"

    asyncio.run(main())


def test_leaving_a_lease_taken_over_by_someone_else_is_quiet(
    live_server: Any, client: tenure.Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Lost and re-granted before the heartbeat noticed: the release on the way out finds
    someone else's lease. Nothing of ours to release, so no warning about it."""
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    with caplog.at_level("DEBUG", logger="tenure"), client.lease("jobs/taken", ttl=60.0):
        admin.force_release("jobs/taken", "reassigned")
        taken = admin.acquire("jobs/taken", ttl_ms=60_000)
    assert admin.get_lease("jobs/taken").token == taken.token  # the new holder's is untouched
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []
    assert any("no longer ours" in r.getMessage() for r in caplog.records)
    admin.close()
