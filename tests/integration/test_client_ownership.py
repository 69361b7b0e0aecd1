"""The ownership rules through ``client.items``, against a real server on each backend (blocking
and asyncio) and in direct mode: a force-release sticks (``revoked``), ``reassign``,
``dispatch`` with a takeover after the agent died (its token refused once its claim ended),
``complete`` with follow-ups, ``create`` fenced by ``parent_epoch``, and stalled claims."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

import tenure
from tenure.core.claims import Completion
from tenure.core.items import Item
from tenure.core.policy import Policy, PolicySet
from tenure.service.principals import Principals
from tenure.settings import Settings

if TYPE_CHECKING:
    from conftest import LiveServer

LAPSE_S = 1.1  # a claim of ttl_ms=1000 (the policy's min_ttl) has lapsed by then
STALL_MS = 300


def wait_for(check: Callable[[], Any], timeout: float = 10, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def refused(url: str, token: str) -> bool:
    """Whether ``token`` is refused (401) by the server at ``url``."""
    with tenure.Client(url, token=token) as client:
        try:
            client.me()
        except tenure.Unauthenticated:
            return True
    return False


def reasons(client: tenure.Client, item_id: str) -> list[str]:
    return [t.reason for t in client.items.get(item_id).transfers]


@pytest.fixture
def people(live_server: LiveServer) -> Iterator[dict[str, tenure.Client]]:
    """alice and bob (humans), sue (a supervisor), carol (nobody special), root (an admin)."""
    tokens = {
        "alice": live_server.token_for("alice", "human"),
        "bob": live_server.token_for("bob", "human"),
        "sue": live_server.token_for("sue", "human", ("supervisor",)),
        "carol": live_server.token_for("carol", "human"),
        "root": live_server.admin_token,
    }
    clients = {name: tenure.Client(live_server.url, token=t) for name, t in tokens.items()}
    try:
        yield clients
    finally:
        for client in clients.values():
            client.close()


def test_force_release_sticks_and_reassign_moves_the_item(
    people: dict[str, tenure.Client],
) -> None:
    alice, bob, sue, carol = people["alice"], people["bob"], people["sue"], people["carol"]
    alice.items.create("write", id="job")
    epoch = alice.items.claim("job").lease.token

    forced = sue.items.force_release("job", "hand it to bob")
    assert forced.item.revoked and forced.item.assignee == "alice"
    view = carol.items.get("job")
    assert (view.lease_state, view.item.revoked) == ("revoked", True)
    assert [(v.item.id, v.lease_state) for v in alice.items.queue()] == [("job", "revoked")]
    assert [v.item.id for v in alice.items.briefing().lapsed] == ["job"]
    with pytest.raises(tenure.AssignedToOther) as again:  # even its assignee
        alice.items.claim("job")
    assert (again.value.assignee, again.value.lease_state) == ("alice", "revoked")
    with pytest.raises(tenure.InvalidRequest) as no_reason:
        alice.items.claim("job", takeover=True)
    assert no_reason.value.field == "reason"

    # only an authority reassigns; the reason is required; the principal must exist
    with pytest.raises(tenure.Forbidden):
        carol.items.reassign("job", "carol", "mine now")
    with pytest.raises(tenure.NotFound):
        sue.items.reassign("job", "nobody", "r")
    with pytest.raises(tenure.InvalidRequest) as bad:
        sue.items.reassign("job", "bob", " ")
    assert bad.value.field == "reason"
    assert carol.items.get("job").item.assignee == "alice"  # refusals changed nothing

    moved = sue.items.reassign("job", "bob", "alice is away")
    assert isinstance(moved, Item)
    assert (moved.assignee, moved.status, moved.revoked) == ("bob", "open", False)
    with pytest.raises(tenure.AssignedToOther):  # it is bob's: others need a takeover
        carol.items.claim("job")
    claim = bob.items.claim("job")  # the new assignee claims without one
    assert claim.lease.token > epoch and claim.item.assignee == "bob"
    with pytest.raises(tenure.StaleToken):
        alice.items.complete("job", epoch, "late")
    last = bob.items.get("job").transfers[-2]
    assert (last.reason, last.from_, last.to, last.actor, last.note) == (
        "reassigned", "alice", "bob", "sue", "alice is away",
    )  # fmt: skip
    (event,) = bob.events(item="job", type="reassigned")
    assert (event.actor, event.holder) == ("sue", "bob")
    bob.items.complete("job", claim.lease.token)
    with pytest.raises(tenure.Conflict):
        sue.items.reassign("job", "alice", "too late")


def test_complete_with_follow_ups_and_a_fenced_create(people: dict[str, tenure.Client]) -> None:
    alice, bob = people["alice"], people["bob"]
    alice.items.create("release 1.4", id="rel")
    epoch = alice.items.claim("rel").lease.token

    child = alice.items.create("notes", parent="rel", parent_epoch=epoch, id="notes")
    assert (child.parent, child.status) == ("rel", "open")
    with pytest.raises(tenure.StaleToken):
        alice.items.create("x", parent="rel", parent_epoch=epoch + 1)
    with pytest.raises(tenure.NotHolder):  # the current epoch, but not bob's
        bob.items.create("x", parent="rel", parent_epoch=epoch)
    with pytest.raises(tenure.InvalidRequest) as bad:
        alice.items.create("x", parent_epoch=epoch)
    assert bad.value.field == "parent_epoch"
    with pytest.raises(tenure.InvalidRequest) as bad:  # nothing is completed or created
        alice.items.complete("rel", epoch, follow_ups=["ok", {"title": ""}])
    assert bad.value.field == "follow_ups[1].title"
    assert alice.items.get("rel").item.status == "in_progress"

    follow_ups: list[Any] = [
        "announce it",
        {"title": "ship", "body": "to PyPI", "priority": 0, "labels": ("rel",), "id": "ship"},
    ]
    done = alice.items.complete("rel", epoch, {"v": "1.4"}, "rel-done", follow_ups)
    assert isinstance(done, Completion) and done.item.status == "done" and not done.duplicate
    first, ship = done.follow_ups
    assert (first.title, first.parent, first.status) == ("announce it", "rel", "open")
    assert (ship.id, ship.body, ship.priority, ship.labels) == ("ship", "to PyPI", 0, ("rel",))
    again = alice.items.complete("rel", epoch, {"v": "1.4"}, "rel-done", follow_ups)
    assert again.duplicate and [x.id for x in again.follow_ups] == [first.id, "ship"]
    assert sorted(x.id for x in bob.items.list() if x.parent == "rel") == sorted(
        ["notes", first.id, "ship"]
    )  # created once
    with pytest.raises(tenure.Conflict):  # a done parent fans out nothing more
        alice.items.create("late", parent="rel", parent_epoch=epoch)


def test_dispatch_again_after_the_agent_died(
    live_server: LiveServer, people: dict[str, tenure.Client]
) -> None:
    alice, carol = people["alice"], people["carol"]
    alice.items.create("review", id="rev")
    first = alice.items.dispatch("rev", agent="r1", ttl_ms=1000)
    assert refused(live_server.url, first.token) is False
    # nobody renews: its supervisor "died"; the claim lapses, the edge stays with the agent
    wait_for(lambda: alice.items.get("rev").lease_state == "lapsed", what="the lapse")
    assert [(v.item.id, v.lease_state) for v in alice.items.queue()] == [("rev", "lapsed")]
    with pytest.raises(tenure.AssignedToOther) as lapsed:
        alice.items.dispatch("rev", agent="r2")
    assert (lapsed.value.assignee, lapsed.value.lease_state) == ("alice/r1", "expired")
    with pytest.raises(tenure.InvalidRequest) as no_reason:
        alice.items.dispatch("rev", agent="r2", takeover=True)
    assert no_reason.value.field == "reason"
    with pytest.raises(tenure.Forbidden):  # not hers to take over
        carol.items.dispatch("rev", takeover=True, reason="mine now")

    second = alice.items.dispatch("rev", agent="r2", takeover=True, reason="r1 died")
    assert second.agent.name == "alice/r2" and second.lease.token > first.lease.token
    assert second.item.assignee == "alice/r2"
    # the dead agent's token ends with its claim: the reaper revokes it
    wait_for(lambda: refused(live_server.url, first.token), what="the old token to go")
    with tenure.Client(live_server.url, token=second.token) as agent:
        done = agent.items.complete("rev", second.lease.token, {"ok": True})
    assert done.item.status == "done"
    assert reasons(alice, "rev") == ["claimed", "taken_over", "completed"]
    took = alice.items.get("rev").transfers[1]
    assert (took.from_, took.to, took.actor, took.note) == (
        "alice/r1",
        "alice/r2",
        "alice",
        "r1 died",
    )
    events = alice.events(item="rev", type="dispatched")
    assert [(e.actor, e.holder, e.reason) for e in events] == [
        ("alice", "alice/r1", None), ("alice", "alice/r2", "r1 died"),
    ]  # fmt: skip


def test_stalled_claims_show_in_the_queue_and_the_briefing(store_url: str) -> None:
    from conftest import LiveServer as Server

    server = Server(store_url, Settings(db=store_url, stall_ms=STALL_MS)).start()
    try:
        with (
            tenure.Client(server.url, token=server.token_for("alice", "human")) as alice,
            tenure.Client(server.url, token=server.token_for("bob", "human")) as bob,
        ):
            alice.items.create("slow", id="slow")
            epoch = alice.items.claim("slow", ttl_ms=60_000).lease.token
            wait_for(lambda: alice.items.get("slow").lease_state == "stalled", what="a stall")
            briefing = alice.items.briefing()
            assert [v.item.id for v in briefing.stalled] == ["slow"]
            assert [v.lease_state for v in briefing.carrying] == ["stalled"]
            alice.items.progress("slow", epoch, "moving again")
            assert alice.items.queue()[0].lease_state == "live"  # progress ends the stall
            wait_for(lambda: alice.items.get("slow").lease_state == "stalled", what="again")
            taken = bob.items.claim("slow", takeover=True, reason="alice is stuck")
            assert taken.item.assignee == "bob"
    finally:
        server.stop()


def test_async_client_has_the_same_ownership_verbs(live_server: LiveServer) -> None:
    tokens = {n: live_server.token_for(n, "human") for n in ("alice", "bob")}

    async def main() -> None:
        async with (
            tenure.AsyncClient(live_server.url, token=tokens["alice"]) as alice,
            tenure.AsyncClient(live_server.url, token=tokens["bob"]) as bob,
            tenure.AsyncClient(live_server.url, token=live_server.admin_token) as admin,
        ):
            await alice.items.create("a", id="a")
            epoch = (await alice.items.claim("a")).lease.token
            child = await alice.items.create("c", parent="a", parent_epoch=epoch)
            assert child.parent == "a"
            with pytest.raises(tenure.StaleToken):
                await alice.items.create("c", parent="a", parent_epoch=epoch + 1)
            forced = await admin.items.force_release("a", "pause")
            assert forced.item.revoked
            assert (await alice.items.get("a")).lease_state == "revoked"
            moved = await admin.items.reassign("a", "bob", "bob finishes")
            assert (moved.assignee, moved.revoked) == ("bob", False)
            claim = await bob.items.claim("a")
            done = await bob.items.complete("a", claim.lease.token, None, "op", ["next"])
            assert [(x.title, x.parent) for x in done.follow_ups] == [("next", "a")]

            await alice.items.create("d", id="d")
            first = await alice.items.dispatch("d", agent="d1", ttl_ms=1000)
            await asyncio.sleep(LAPSE_S)
            second = await alice.items.dispatch("d", agent="d2", takeover=True, reason="d1 died")
            assert second.lease.token > first.lease.token
            assert (await alice.items.get("d")).item.assignee == "alice/d2"

    asyncio.run(main())


def test_direct_mode_has_the_same_ownership_verbs(store_url: str) -> None:
    store = tenure.open_store(store_url)
    try:
        Principals(store).bootstrap("root", "human", ("admin",))
        Principals(store).bootstrap("bob", "human")
    finally:
        store.close()
    quick = PolicySet(Policy(stall_after=STALL_MS))
    with (
        tenure.Client(store_url, principal="cron", policy=quick) as cron,
        tenure.Client(store_url, principal="root", policy=quick) as root,
        tenure.Client(store_url, principal="bob", policy=quick) as bob,
    ):
        cron.items.create("nightly", id="n")
        epoch = cron.items.claim("n", ttl_ms=60_000).lease.token
        assert cron.items.create("sub", parent="n", parent_epoch=epoch).parent == "n"
        wait_for(lambda: cron.items.get("n").lease_state == "stalled", what="a stall")
        assert [v.item.id for v in cron.items.briefing().stalled] == ["n"]
        forced = root.items.force_release("n", "stop")
        assert forced.item.revoked and cron.items.get("n").lease_state == "revoked"
        with pytest.raises(tenure.AssignedToOther):
            cron.items.claim("n")
        moved = root.items.reassign("n", "bob", "bob takes it")
        assert moved.assignee == "bob"
        claim = bob.items.claim("n")
        done = bob.items.complete("n", claim.lease.token, follow_ups=[{"title": "t", "id": "t1"}])
        assert [x.id for x in done.follow_ups] == ["t1"]

        cron.items.create("review", id="r")
        first = cron.items.dispatch("r", agent="h1", ttl_ms=1000)
        time.sleep(LAPSE_S)
        with pytest.raises(tenure.AssignedToOther):
            cron.items.dispatch("r", agent="h2")
        second = cron.items.dispatch("r", agent="h2", takeover=True, reason="h1 died")
        assert second.lease.token > first.lease.token and second.item.assignee == "cron/h2"
