"""``client.items`` against a real server on each backend, blocking and asyncio, and in direct
mode; the work handle: heartbeat, progress then complete, release on exit, loss, stale epoch."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

import tenure
from tenure.core.items import Item, ItemView, Transfer
from tenure.service.queue import Briefing, Claim, Completion, Dispatch, ItemRelease

if TYPE_CHECKING:
    from conftest import LiveServer

LAPSE_S = 1.1  # a claim of ttl_ms=1000 (the policy's min_ttl) has lapsed by then


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[tenure.Client]:
    with tenure.Client(live_server.url, token=live_server.admin_token) as client:
        yield client


@pytest.fixture
def alice(live_server: LiveServer) -> Iterator[tenure.Client]:
    token = live_server.token_for("alice", kind="human")
    with tenure.Client(live_server.url, token=token) as client:
        yield client


@pytest.fixture
def bob(live_server: LiveServer) -> Iterator[tenure.Client]:
    with tenure.Client(live_server.url, token=live_server.token_for("bob")) as client:
        yield client


def reasons(view: ItemView) -> list[str]:
    return [t.reason for t in view.transfers]


def test_every_item_verb_round_trips(
    live_server: LiveServer, alice: tenure.Client, bob: tenure.Client, admin: tenure.Client
) -> None:
    item = alice.items.create("write", body="b", priority=1, labels=["x", "y"], id="job")
    assert isinstance(item, Item) and item.labels == ("x", "y")
    assert (item.id, item.title, item.body, item.priority, item.status) == (
        "job", "write", "b", 1, "open",
    )  # fmt: skip
    view = alice.items.get("job")
    assert isinstance(view, ItemView) and view.item == item
    assert (view.lease, view.lease_state, view.transfers) == (None, "none", ())
    assert alice.items.list(label="x") == [replace(item, body="")]  # summaries: get() has it
    assert alice.items.list(status="done") == []
    edited = alice.items.update("job", title="write it", labels=("z",))
    assert (edited.item.title, edited.item.labels) == ("write it", ("z",))

    claim = alice.items.claim("job", ttl_ms=5000, task="t1")
    assert isinstance(claim, Claim) and claim.lease.holder == "alice"
    epoch = claim.lease.token
    assert claim.item.epoch == epoch and claim.item.status == "in_progress"
    renewed = alice.items.renew("job", ttl_ms=6000)
    assert isinstance(renewed, tenure.Lease) and renewed.token == epoch and renewed.ttl_ms == 6000
    assert alice.items.renew("job", epoch).renewals == 2
    ext = alice.items.extend("job", by_ms=60_000)
    assert isinstance(ext, tenure.ExtendResult) and ext.extended
    assert not alice.items.extend("job", until=1, epoch=epoch).extended

    with pytest.raises(tenure.LeaseHeld) as held:
        bob.items.claim("job")
    assert (held.value.holder, held.value.task) == ("alice", "t1")
    with pytest.raises(tenure.NotHolder):
        bob.items.renew("job")

    progressed = alice.items.progress("job", epoch, "half", percent=50, data={"n": 1})
    assert isinstance(progressed, Item) and progressed.progress is not None
    assert progressed.progress["message"] == "half" and progressed.progress["data"] == {"n": 1}
    live = bob.items.get("job")
    assert live.lease_state == "live" and live.lease is not None and live.lease.token == epoch
    assert live.transfers[0] == Transfer(
        "job", None, "alice", epoch, "claimed", "alice", live.transfers[0].at, None
    )
    mine = alice.items.queue()
    assert [v.item.id for v in mine] == ["job"] and bob.items.queue("alice") == mine
    assert bob.items.queue() == []

    done = alice.items.complete("job", epoch, result={"ok": True}, op_id="op-1")
    assert isinstance(done, Completion) and not done.duplicate
    assert (done.item.status, done.item.result) == ("done", {"ok": True})
    again = alice.items.complete("job", epoch, result="ignored", op_id="op-1")
    assert again.duplicate and again.item.result == {"ok": True}
    released = alice.items.release("job")
    assert isinstance(released, ItemRelease) and not released.released

    bob.items.create("second", id="two")
    bob_epoch = bob.items.claim("two").lease.token
    forced = admin.items.force_release("two", "stuck")
    assert isinstance(forced, Claim) and forced.lease.state == "force_released"
    with pytest.raises(tenure.StaleToken) as stale:
        bob.items.progress("two", bob_epoch, "still here?")
    assert stale.value.current_token == bob_epoch
    cancelled = bob.items.cancel("two", "not needed")
    assert isinstance(cancelled, Item) and cancelled.status == "cancelled"
    with pytest.raises(tenure.Conflict) as closed:
        bob.items.claim("two")
    assert closed.value.field == "status"

    alice.items.create("third", id="three", priority=0)
    alice.items.create("fourth", id="four", priority=3)
    assert [x.id for x in bob.items.ready()] == ["three", "four"]
    assert [x.id for x in bob.items.ready(limit=1)] == ["three"]
    dispatched = alice.items.dispatch("three", agent="r1", ttl_ms=20_000, task="review")
    assert isinstance(dispatched, Dispatch)
    assert dispatched.agent == tenure.Principal("alice/r1", "agent", (), "alice")
    assert dispatched.lease.holder == "alice/r1" and dispatched.item.assignee == "alice/r1"
    with tenure.Client(live_server.url, token=dispatched.token) as agent:
        assert agent.me().name == "alice/r1"
        agent.items.progress("three", dispatched.lease.token, "reviewing")
    with pytest.raises(tenure.LeaseHeld):
        alice.items.dispatch("three")

    briefing = alice.items.briefing(ready=2)
    assert isinstance(briefing, Briefing) and briefing.principal == "alice"
    assert [v.item.id for v in briefing.carrying] == ["three"]
    assert [x.id for x in briefing.ready] == ["four"]

    with pytest.raises(tenure.NotFound):
        alice.items.get("nope")
    with pytest.raises(tenure.Conflict) as taken:
        alice.items.create("again", id="job")
    assert taken.value.field == "id"
    with pytest.raises(tenure.InvalidRequest) as bad:
        alice.items.create(" ")
    assert bad.value.field == "title"


def test_a_stale_epoch_after_a_takeover_raises_stale_token(
    alice: tenure.Client, bob: tenure.Client
) -> None:
    alice.items.create("job", id="job")
    epoch_a = alice.items.claim("job", ttl_ms=1000).lease.token
    time.sleep(LAPSE_S)
    with pytest.raises(tenure.AssignedToOther) as lapsed:
        bob.items.claim("job")
    assert (lapsed.value.assignee, lapsed.value.lease_state) == ("alice", "expired")
    epoch_b = bob.items.claim("job", takeover=True, reason="alice is gone").lease.token
    for attempt in (
        lambda: alice.items.progress("job", epoch_a, "back"),
        lambda: alice.items.complete("job", epoch_a, op_id="a"),
    ):
        with pytest.raises(tenure.StaleToken) as stale:
            attempt()
        assert (stale.value.current_token, stale.value.holder) == (epoch_b, "bob")
    bob.items.complete("job", epoch_b)
    assert reasons(bob.items.get("job")) == ["claimed", "taken_over", "completed"]


def test_work_heartbeats_reports_progress_and_completes(
    alice: tenure.Client, admin: tenure.Client
) -> None:
    alice.items.create("job", id="job")
    with alice.items.work("job", ttl=1.0, task="w") as work:
        assert work.item.assignee == "alice" and work.claim.lease.task == "w"
        assert work.epoch == work.claim.lease.token == work.token
        assert work.item_id == "job" and work.key == "items/job"
        item = work.progress("started", percent=10, data={"step": 1})
        assert item.progress is not None and item.progress["percent"] == 10
        assert work.item == item
        time.sleep(LAPSE_S * 1.3)  # longer than the ttl: the heartbeat keeps the claim
        assert not work.lost
        assert admin.items.get("job").lease_state == "live"
        done = work.complete(result={"rows": 3}, op_id="run-1")
        assert done.item.status == "done" and work.completion == done
        assert work.item.result == {"rows": 3}
    view = admin.items.get("job")
    assert view.item.status == "done" and reasons(view) == ["claimed", "completed"]


def test_leaving_work_without_completing_releases_the_claim(alice: tenure.Client) -> None:
    alice.items.create("job", id="job")
    with alice.items.work("job") as work:
        work.progress("started")
    view = alice.items.get("job")
    assert (view.item.status, view.item.assignee) == ("open", None)
    assert reasons(view) == ["claimed", "released"]

    with pytest.raises(RuntimeError, match="boom"), alice.items.work("job"):
        raise RuntimeError("boom")
    assert alice.items.get("job").item.assignee is None

    with alice.items.work("job") as work:
        released = work.release()
        assert released.released and released.item.status == "open"
    assert reasons(alice.items.get("job"))[-1] == "released"


def test_work_notices_a_force_release_and_a_takeover(
    alice: tenure.Client, bob: tenure.Client, admin: tenure.Client
) -> None:
    alice.items.create("job", id="job")
    with alice.items.work("job", ttl=1.0) as work:
        admin.items.force_release("job", "stuck")
        assert work.wait_lost(5)
        assert work.lost and work.lost_reason == "force_released"
        with pytest.raises(tenure.LeaseLost):
            work.check()
    # the force-release sticks: leaving the block did not release the revoked edge
    view = alice.items.get("job")
    assert (view.item.assignee, view.item.revoked, view.lease_state) == ("alice", True, "revoked")
    assert reasons(view) == ["claimed", "force_released"]
    with pytest.raises(tenure.AssignedToOther) as revoked:
        alice.items.claim("job")
    assert revoked.value.lease_state == "revoked"

    back = alice.items.work("job", ttl=30.0, takeover=True, reason="the pause is over")
    with back as work:  # no renewal happens in this block
        assert not work.item.revoked
        admin.items.force_release("job", "stuck again")
        epoch_b = bob.items.claim("job", takeover=True, reason="mine now").lease.token
        with pytest.raises(tenure.StaleToken) as stale:
            work.complete(result="late", op_id="late")
        assert (stale.value.current_token, stale.value.holder) == (epoch_b, "bob")
        assert work.lost and work.lost_reason == "stale_token"
        with pytest.raises(tenure.StaleToken):
            work.progress("still here")
    view = bob.items.get("job")
    assert (view.item.assignee, view.lease_state) == ("bob", "live")  # not released by alice
    assert view.item.result is None


def test_async_items_and_work(live_server: LiveServer) -> None:
    alice_token = live_server.token_for("alice")
    bob_token = live_server.token_for("bob")

    async def main() -> None:
        async with (
            tenure.AsyncClient(live_server.url, token=alice_token) as alice,
            tenure.AsyncClient(live_server.url, token=bob_token) as bob,
            tenure.AsyncClient(live_server.url, token=live_server.admin_token) as admin,
        ):
            item = await alice.items.create("job", id="job", labels=["a"])
            assert (await alice.items.list(label="a")) == [item]
            assert (await alice.items.update("job", priority=0)).item.priority == 0
            claim = await alice.items.claim("job", ttl_ms=5000)
            assert (await alice.items.renew("job")).token == claim.lease.token
            assert (await alice.items.extend("job", by_ms=10_000)).extended
            assert (await bob.items.queue("alice"))[0].item.id == "job"
            assert (await alice.items.release("job")).released
            assert [x.id for x in await bob.items.ready()] == ["job"]

            async with alice.items.work("job", ttl=1.0, task="aw") as work:
                await work.progress("half", percent=50)
                await asyncio.sleep(LAPSE_S * 1.3)
                assert not work.lost
                done = await work.complete(result=1, op_id="x")
                assert done.item.status == "done" and work.completion == done
            assert reasons(await alice.items.get("job")) == [
                "claimed", "released", "claimed", "completed",
            ]  # fmt: skip

            await alice.items.create("lost", id="lost")
            with pytest.raises(tenure.LeaseLost) as lost:
                async with alice.items.work("lost", ttl=1.0) as work:
                    await admin.items.force_release("lost", "stop")
                    await asyncio.sleep(10)  # cancelled by the heartbeat
            assert lost.value.reason == "force_released"

            await alice.items.create("taken", id="taken")
            async with alice.items.work("taken", ttl=30.0) as work:
                await admin.items.force_release("taken", "stuck")
                epoch_b = (await bob.items.claim("taken", takeover=True, reason="r")).lease.token
                with pytest.raises(tenure.StaleToken) as stale:
                    await work.complete()
                assert (stale.value.current_token, stale.value.holder) == (epoch_b, "bob")
                await asyncio.sleep(0.05)  # the block is not cancelled: it has the error
            assert (await bob.items.get("taken")).item.assignee == "bob"

            await alice.items.create("d", id="d")
            dispatched = await alice.items.dispatch("d", agent="r1")
            assert dispatched.agent.name == "alice/r1"
            forced = await alice.items.force_release("d", "redo")  # the agent's parent may
            assert forced.lease.state == "force_released"
            briefing = await alice.items.briefing()
            assert briefing.principal == "alice"  # force-released, both stay revoked
            assert [(v.item.id, v.lease_state) for v in briefing.lapsed] == [
                ("lost", "revoked"), ("d", "revoked"),
            ]  # fmt: skip
            cancelled = await bob.items.cancel("taken", "done with it")
            assert cancelled.status == "cancelled"

    asyncio.run(main())


def test_direct_mode_items(store_url: str) -> None:
    with tenure.Client(store_url, principal="cron") as client:
        client.items.create("nightly", id="n1")
        with client.items.work("n1", ttl=5.0) as work:
            work.progress("running")
            work.complete(result={"rows": 1}, op_id="n1-run")
        view = client.items.get("n1")
        assert view.item.status == "done" and reasons(view) == ["claimed", "completed"]
        client.items.create("review", id="r1")
        dispatched = client.items.dispatch("r1", agent="helper")
        assert dispatched.agent.name == "cron/helper" and dispatched.agent.parent == "cron"
        assert [v.item.id for v in client.items.queue()] == ["r1"]
        assert client.items.queue("cron/helper")[0].lease_state == "live"
        assert client.items.briefing().carrying[0].item.id == "r1"
        assert client.items.ready() == []
        with pytest.raises(tenure.LeaseHeld):
            client.items.claim("r1")

    async def main() -> None:
        async with tenure.AsyncClient(store_url, principal="cron") as client:
            await client.items.create("async", id="a1")
            async with client.items.work("a1") as work:
                await work.complete()
            assert (await client.items.get("a1")).item.status == "done"

    asyncio.run(main())
