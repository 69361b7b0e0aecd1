"""Sessions over HTTP, on each backend: two client objects sharing one token are two holders.

Each :class:`tenure.Client` object is a session of its own, so two processes (or two clients in
one process) that share a principal's token exclude each other like strangers; a heartbeat or a
``renew_all`` keeps only its own session's leases alive; a work handle releases only the claim of
the epoch it holds.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

import tenure
from tenure.client._wire import Call, Reply, TransportError
from tenure.client.sync import HttpTransport

if TYPE_CHECKING:
    from conftest import LiveServer

TTL = 1.0  # the policy's min_ttl


@pytest.fixture
def token(live_server: LiveServer) -> str:
    return live_server.token_for("worker")


@pytest.fixture
def pair(live_server: LiveServer, token: str) -> Iterator[tuple[tenure.Client, tenure.Client]]:
    with (
        tenure.Client(live_server.url, token=token) as one,
        tenure.Client(live_server.url, token=token) as two,
    ):
        yield one, two


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[tenure.Client]:
    with tenure.Client(live_server.url, token=live_server.admin_token) as client:
        yield client


def wait_until(check: Any, timeout: float = 10.0) -> None:
    give_up = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < give_up, "timed out"
        time.sleep(0.02)


def test_two_clients_with_one_token_exclude_each_other(
    pair: tuple[tenure.Client, tenure.Client],
) -> None:
    one, two = pair
    assert one.session != two.session
    lease = one.acquire("jobs/nightly", ttl_ms=5000, task="run-1")
    assert (lease.holder, lease.session) == ("worker", one.session)
    with pytest.raises(tenure.LeaseHeld) as held:
        two.acquire("jobs/nightly", ttl_ms=5000)
    assert (held.value.holder, held.value.session, held.value.task) == (
        "worker", one.session, "run-1",
    )  # fmt: skip
    again = one.acquire("jobs/nightly", ttl_ms=5000)  # the same session: renewed, same token
    assert (again.token, again.renewals) == (lease.token, 1)
    with pytest.raises(tenure.LeaseHeld):  # waiting for it waits like for anyone's
        two.acquire("jobs/nightly", wait_ms=300)
    with pytest.raises(tenure.NotHolder) as not_holder:  # no token: only its own session's
        two.release("jobs/nightly")
    assert not_holder.value.session == one.session
    assert two.get_lease("jobs/nightly").session == one.session
    assert [x.session for x in two.list_leases(holder="worker")] == [one.session]
    assert two.release("jobs/nightly", lease.token).released  # a token says which: any session

    one.items.create("fix the flaky test", id="flaky")
    claim = one.items.claim("flaky", ttl_ms=5000)
    with pytest.raises(tenure.LeaseHeld) as taken:
        two.items.claim("flaky")
    assert (taken.value.holder, taken.value.session) == ("worker", one.session)
    assert one.items.claim("flaky", ttl_ms=5000).lease.token == claim.lease.token  # renewed
    with pytest.raises(tenure.NotHolder):
        two.items.release("flaky")
    assert one.items.get("flaky").lease_state == "live"


def test_a_client_with_the_other_clients_session_is_that_holder(
    live_server: LiveServer, token: str, pair: tuple[tenure.Client, tenure.Client]
) -> None:
    one, _ = pair
    lease = one.acquire("jobs/shared", ttl_ms=5000)
    with tenure.Client(live_server.url, token=token, session=one.session) as same:
        assert same.acquire("jobs/shared", ttl_ms=5000).token == lease.token
        assert same.release("jobs/shared").released


def test_one_clients_heartbeat_does_not_keep_the_others_lapsed_lease_alive(
    pair: tuple[tenure.Client, tenure.Client], admin: tenure.Client
) -> None:
    one, two = pair
    with one.lease("jobs/held", ttl=TTL) as held:
        theirs = two.acquire("jobs/left", ttl_ms=1000)  # nobody heartbeats this one
        mine = one.renew_all()
        assert [x.key for x in mine.renewed] == ["jobs/held"] and mine.lost == ()
        assert [x.key for x in two.renew_all().renewed] == ["jobs/left"]
        time.sleep(2.2 * TTL)
        held.check()
        assert [x.key for x in one.renew_all().renewed] == ["jobs/held"]
        left = admin.get_lease("jobs/left")
        assert (left.state, left.token, left.session) == ("expired", theirs.token, two.session)
        assert admin.get_lease("jobs/held").state == "live"
        assert two.renew_all().renewed == ()


def test_async_clients_with_one_token_exclude_each_other(
    live_server: LiveServer, token: str
) -> None:
    async def main() -> None:
        async with (
            tenure.AsyncClient(live_server.url, token=token) as one,
            tenure.AsyncClient(live_server.url, token=token) as two,
            one.lease("a/k", ttl=TTL) as held,
        ):
            with pytest.raises(tenure.LeaseHeld) as raised:
                async with two.lease("a/k", ttl=TTL):
                    pass
            assert raised.value.session == one.session
            theirs = await two.acquire("a/other", ttl_ms=1000)
            await asyncio.sleep(2.2 * TTL)
            held.check()
            assert [x.key for x in (await one.renew_all()).renewed] == ["a/k"]
            lapsed = await one.get_lease("a/other")
            assert (lapsed.state, lapsed.token) == ("expired", theirs.token)

    asyncio.run(main())


class Partition:
    """An HTTP transport that can stop carrying one verb (the request never leaves)."""

    def __init__(self, url: str, token: str) -> None:
        self.http = HttpTransport(url, token)
        self.cut: set[str] = set()
        self.lock = threading.Lock()

    def send(self, call: Call[Any], timeout: float) -> Reply:
        with self.lock:
            cut = call.op in self.cut
        if cut:
            raise TransportError("partitioned (test)", method=call.method, sent=False)
        return self.http.send(call, timeout)

    def close(self) -> None:
        self.http.close()


def test_a_stale_work_handle_does_not_release_a_fresh_claim_of_the_same_session(
    live_server: LiveServer, token: str
) -> None:
    link = Partition(live_server.url, token)
    with tenure.Client(live_server.url, token=token, transport=link) as client:
        client.items.create("migrate", id="mig")
        with client.items.work("mig", ttl=TTL) as work:
            stale = work.epoch
            with link.lock:
                link.cut.add("renew_item")  # the heartbeat cannot reach the server
            assert work.wait_lost(3 * TTL) and work.lost_reason == "deadline"
            wait_until(lambda: client.items.get("mig").lease_state == "lapsed")
            fresh = client.items.claim("mig", ttl_ms=30_000)  # the same principal and session
            assert fresh.lease.token > stale
        # leaving released with the stale epoch: nothing changed
        view = client.items.get("mig")
        assert view.lease_state == "live" and view.lease is not None
        assert (view.lease.token, view.item.assignee) == (fresh.lease.token, "worker")
        assert not client.items.release("mig", epoch=stale).released
        assert client.items.get("mig").lease_state == "live"
        assert client.items.release("mig", epoch=fresh.lease.token).released
