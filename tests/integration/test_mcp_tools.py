"""Every MCP tool through the SDK's in-process client, on each backend: what it returns
(structuredContent matching its output schema), each refusal as a tool error naming the code and
the facts, the heartbeat of every call, and each connection as a session of its own (SPEC §7)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from _mcp import TOOLS, Agent, call, in_process, refused

import tenure

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service(make_service: Callable[..., tenure.Service], clock: tenure.FakeClock) -> tenure.Service:
    clock.set(int(time.time() * 1000))  # error texts word instants relative to the real now
    return make_service()


@pytest.fixture
def agent(service: tenure.Service) -> Agent:
    """In-process MCP connections on ``service`` (see :func:`_mcp.in_process`)."""
    return in_process(service)


def hms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%SZ")


async def test_the_tools_and_their_schemas(agent: Agent) -> None:
    async with agent("jo") as jo:
        listed = (await jo.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        assert len(tool.description or "") > 80, f"{tool.name} is not described for an agent"
    claim = next(t for t in listed if t.name == "claim")
    assert {"item_id", "ttl_ms", "task", "takeover", "reason"} <= set(
        claim.input_schema["properties"]
    )
    assert "epoch" in claim.output_schema["properties"]
    for word in ("epoch", "lease_held", "another item", "30 s"):
        assert word in (claim.description or "")


async def test_whoami_names_the_principal(agent: Agent) -> None:
    async with agent("jo/agent-1", parent=None, roles=("supervisor",), session="s-7") as jo:
        me = await call(jo, "whoami")
    assert me == {
        "name": "jo/agent-1", "kind": "agent", "roles": ["supervisor"], "parent": None,
        "session": "s-7",
    }  # fmt: skip


async def test_create_show_ready_and_their_refusals(agent: Agent) -> None:
    async with agent("jo") as jo:
        made = (await call(jo, "create_item", title="fix login", id="login", priority=1))["item"]
        assert (made["id"], made["status"], made["created_by"]) == ("login", "open", "jo")
        await call(jo, "create_item", title="later", id="later", labels=["x"], body="b")
        ready = (await call(jo, "ready"))["items"]
        assert [i["id"] for i in ready] == ["login", "later"]  # most urgent first
        assert [i["id"] for i in (await call(jo, "ready", limit=1))["items"]] == ["login"]
        shown = await call(jo, "show_item", item_id="login")
        assert (shown["item"]["title"], shown["lease"], shown["lease_state"]) == (
            "fix login", None, "none",
        )  # fmt: skip
        await refused(jo, "create_item", "conflict", title="again", id="login")
        text = await refused(jo, "create_item", "invalid_request", title="bad", id="no spaces")
        assert "id" in text and "Fix the argument" in text
        text = await refused(jo, "show_item", "not_found", item_id="nope")
        assert text.startswith("not_found: no item 'nope'")


async def test_claim_progress_complete(agent: Agent, service: tenure.Service) -> None:
    async with agent("jo/agent-1") as jo:
        await call(jo, "create_item", title="fix login", id="login")
        claim = await call(jo, "claim", item_id="login", task="fix-login", ttl_ms=20_000)
        epoch = claim["epoch"]
        assert epoch == claim["lease"]["token"] == claim["item"]["epoch"] > 0
        assert (claim["lease"]["holder"], claim["lease"]["task"]) == ("jo/agent-1", "fix-login")
        assert claim["item"]["status"] == "in_progress"
        again = await call(jo, "claim", item_id="login")  # your own claim: renewed, same epoch
        assert again["epoch"] == epoch
        item = await call(jo, "progress", item_id="login", epoch=epoch, message="half", percent=50)
        assert item["item"]["progress"]["message"] == "half"
        done = await call(jo, "complete", item_id="login", epoch=epoch, result={"pr": 7}, op_id="a")
        assert (done["item"]["status"], done["item"]["result"], done["duplicate"]) == (
            "done", {"pr": 7}, False,
        )  # fmt: skip
        repeat = await call(jo, "complete", item_id="login", epoch=epoch, op_id="a")
        assert repeat["duplicate"] is True
    assert service.items.get("login").item.status == "done"


async def test_a_conflict_names_the_holder_task_and_expiry(agent: Agent) -> None:
    async with agent("jo/agent-3") as jo, agent("kim/agent-1") as kim:
        await call(jo, "create_item", title="fix login", id="login")
        lease = (await call(jo, "claim", item_id="login", task="fix-login"))["lease"]
        text = await refused(kim, "claim", "lease_held", item_id="login")
        held = f"held by jo/agent-3 (session {lease['session']}, task fix-login) until "
        assert held + hms(lease["expires_at"]) in text
        assert "Do not wait on a held item: pick another" in text
        assert "come back later only if nothing else is ready" in text
        assert "Do not take it over" in text
        assert (await call(kim, "ready"))["items"] == []
        text = await refused(kim, "renew", "not_holder", item_id="login")
        assert "held by jo/agent-3" in text


async def test_a_lapsed_claim_is_assigned_to_other_until_a_takeover_with_reason(
    agent: Agent, clock: tenure.FakeClock
) -> None:
    async with agent("jo/agent-3") as jo, agent("kim/agent-1") as kim:
        await call(jo, "create_item", title="fix login", id="login")
        old = (await call(jo, "claim", item_id="login", ttl_ms=5000))["epoch"]
        clock.advance(6000)
        text = await refused(kim, "claim", "assigned_to_other", item_id="login")
        assert "assigned to jo/agent-3 (lease expired); their lease lapsed at" in text
        assert "takeover=true and a reason" in text and "another item" in text
        taken = await call(kim, "claim", item_id="login", takeover=True, reason="jo is gone")
        assert taken["epoch"] > old and taken["item"]["assignee"] == "kim/agent-1"
        text = await refused(jo, "progress", "stale_token", item_id="login", epoch=old, message="x")
        assert f"current token is {taken['epoch']}" in text and "stop this work" in text
        await refused(jo, "complete", "stale_token", item_id="login", epoch=old)
        shown = await call(kim, "show_item", item_id="login")
        assert [t["reason"] for t in shown["transfers"]][-1] == "taken_over"


async def test_renew_extend_release(agent: Agent, clock: tenure.FakeClock) -> None:
    async with agent("jo") as jo:
        await call(jo, "create_item", title="t", id="a")
        await refused(jo, "renew", "not_found", item_id="a")  # never claimed
        epoch = (await call(jo, "claim", item_id="a", ttl_ms=5000))["epoch"]
        lease = (await call(jo, "renew", item_id="a", ttl_ms=8000))["lease"]
        assert (lease["token"], lease["ttl_ms"]) == (epoch, 8000)
        ext = await call(jo, "extend", item_id="a", by_ms=60_000)
        assert ext["extended"] and not ext["capped"]
        assert ext["granted_until"] == clock.now_ms() + 60_000
        capped = await call(jo, "extend", item_id="a", by_ms=10**10, epoch=epoch)
        assert capped["capped"] and capped["granted_until"] < capped["requested_until"]
        await refused(jo, "extend", "invalid_request", item_id="a")  # neither by_ms nor until
        released = await call(jo, "release", item_id="a")
        assert released["released"] and released["item"]["status"] == "open"
        assert released["item"]["assignee"] is None
        assert (await call(jo, "release", item_id="a"))["released"] is False  # idempotent
        text = await refused(jo, "renew", "lease_lost", item_id="a", epoch=epoch)
        assert "released" in text and "claim the item again (tool claim)" in text


async def test_queue_and_briefing(agent: Agent, clock: tenure.FakeClock) -> None:
    async with agent("jo") as jo, agent("kim") as kim:
        for item_id in ("a", "b", "c"):
            await call(jo, "create_item", title=item_id, id=item_id)
        await call(jo, "claim", item_id="a")
        await call(jo, "claim", item_id="b", ttl_ms=2000)
        clock.advance(2500)  # b lapses (a is renewed by every call jo makes)
        queue = (await call(jo, "queue"))["items"]
        assert {(v["item"]["id"], v["lease_state"]) for v in queue} == {
            ("a", "live"), ("b", "lapsed"),
        }  # fmt: skip
        theirs = (await call(kim, "queue", principal="jo"))["items"]
        assert {v["item"]["id"] for v in theirs} == {"a", "b"}
        brief = await call(jo, "briefing", ready=3)
        assert brief["principal"] == "jo"
        assert [v["item"]["id"] for v in brief["carrying"]] == ["a"]
        assert [v["item"]["id"] for v in brief["lapsed"]] == ["b"]
        assert [i["id"] for i in brief["ready"]] == ["c"]
        await refused(jo, "briefing", "invalid_request", ready=10**9)


async def test_transfer_lock_hands_a_lease_to_another_session(agent: Agent) -> None:
    async with agent("jo", session="a") as a, agent("jo", session="b") as b:
        lease = (await call(a, "acquire_lock", key="deploy/prod"))["lease"]
        moved = (
            await call(a, "transfer_lock", key="deploy/prod", token=lease["token"], to_session="b")
        )["lease"]
        assert (moved["session"], moved["holder"]) == ("b", "jo")
        assert moved["token"] > lease["token"]
        renewed = (await call(b, "renew_lock", key="deploy/prod", token=moved["token"]))["lease"]
        assert renewed["token"] == moved["token"]
        await refused(a, "release_lock", "not_holder", key="deploy/prod")
        again = {"key": "deploy/prod", "token": lease["token"], "to_session": "a"}
        await refused(a, "transfer_lock", "lease_lost", **again)
        here = {**again, "token": moved["token"], "to_session": "b"}
        await refused(b, "transfer_lock", "conflict", **here)
        await refused(a, "transfer_lock", "invalid_request", **{**again, "to_session": "\x00"})


async def test_locks(agent: Agent) -> None:
    async with agent("jo") as jo, agent("kim") as kim:
        lease = (await call(jo, "acquire_lock", key="deploy/prod", task="release-42"))["lease"]
        assert (lease["holder"], lease["ttl_ms"], lease["state"]) == ("jo", 30_000, "live")
        text = await refused(kim, "acquire_lock", "lease_held", key="deploy/prod")
        held = f"held by jo (session {lease['session']}, task release-42) until "
        assert held + hms(lease["expires_at"]) in text
        renewed = (await call(jo, "renew_lock", key="deploy/prod", token=lease["token"]))["lease"]
        assert renewed["token"] == lease["token"] and renewed["renewals"] >= 1
        await refused(kim, "renew_lock", "not_holder", key="deploy/prod", token=lease["token"])
        await refused(kim, "release_lock", "not_holder", key="deploy/prod")
        await refused(jo, "acquire_lock", "invalid_request", key="x", ttl_ms=1)
        listed = (await call(kim, "list_leases", prefix="deploy/"))["leases"]
        assert [x["key"] for x in listed] == ["deploy/prod"]
        assert (await call(kim, "list_leases", holder="kim"))["leases"] == []
        released = await call(jo, "release_lock", key="deploy/prod", token=lease["token"])
        assert released["released"] and released["lease"]["state"] == "released"
        assert (await call(jo, "release_lock", key="deploy/prod"))["released"] is False
        text = await refused(
            jo, "renew_lock", "lease_lost", key="deploy/prod", token=lease["token"]
        )
        assert "released" in text


async def test_a_semaphore_over_acquire_lock(agent: Agent) -> None:
    async with agent("jo") as jo, agent("kim") as kim, agent("lu") as lu:
        one = (await call(jo, "acquire_lock", key="gpu", slots=2, task="train"))["lease"]
        two = (await call(kim, "acquire_lock", key="gpu", slots=2))["lease"]
        assert (one["key"], two["key"]) == ("gpu#slot/0", "gpu#slot/1")
        assert (two["semaphore"], two["slot"], two["slots"]) == ("gpu", 1, 2)
        assert two["token"] > one["token"]
        text = await refused(lu, "acquire_lock", "lease_held", key="gpu", slots=2)
        assert "all 2 slots held, by jo, kim" in text
        await refused(lu, "acquire_lock", "slots_mismatch", key="gpu", slots=3)
        await call(jo, "release_lock", key=one["key"], token=one["token"])
        got = (await call(lu, "acquire_lock", key="gpu", slots=2))["lease"]
        assert got["key"] == "gpu#slot/0" and got["token"] > two["token"]


async def test_force_release(agent: Agent) -> None:
    async with agent("jo") as jo, agent("kim") as kim, agent("root", roles=("admin",)) as root:
        await call(jo, "create_item", title="t", id="a")
        epoch = (await call(jo, "claim", item_id="a"))["epoch"]
        await call(jo, "acquire_lock", key="deploy/prod")
        text = await refused(kim, "force_release", "forbidden", item_id="a", reason="stuck")
        assert "kim" in text
        await refused(root, "force_release", "invalid_request", reason="stuck")
        await refused(root, "force_release", "invalid_request", reason="x", key="k", item_id="a")
        ended = await call(root, "force_release", item_id="a", reason="stuck for an hour")
        assert ended["lease"]["state"] == "force_released" and ended["item"]["id"] == "a"
        await refused(jo, "complete", "stale_token", item_id="a", epoch=epoch)
        lock = await call(root, "force_release", key="deploy/prod", reason="deploy is stuck")
        assert lock["lease"]["state"] == "force_released" and lock["item"] is None
        await refused(root, "force_release", "not_found", key="deploy/prod", reason="again")


async def test_every_write_call_is_a_heartbeat(agent: Agent, clock: tenure.FakeClock) -> None:
    """A tool that is not read-only renews the caller's leases first; a read-only one changes
    nothing, not even that (its readOnlyHint is honest)."""
    async with agent("jo") as jo, agent("kim") as kim:
        await call(jo, "create_item", title="t", id="a")
        await call(jo, "claim", item_id="a", ttl_ms=3000)
        await call(jo, "acquire_lock", key="k", ttl_ms=3000)
        for n in range(4):  # 8 s in all, well past the 3 s ttl, with a call every 2 s
            clock.advance(2000)
            await call(jo, "create_item", title=f"more {n}")
        held = {x["key"]: x["holder"] for x in (await call(kim, "list_leases"))["leases"]}
        assert held == {"items/a": "jo", "k": "jo"}
        before = (await call(jo, "show_item", item_id="a"))["lease"]
        for tool, args in (("ready", {}), ("queue", {}), ("whoami", {}), ("list_leases", {})):
            await call(jo, tool, **args)
        after = (await call(jo, "show_item", item_id="a"))["lease"]
        assert (after["expires_at"], after["renewals"]) == (
            before["expires_at"], before["renewals"],
        )  # fmt: skip
        clock.advance(2000)
        beat = await call(jo, "heartbeat")
        assert sorted(x["key"] for x in beat["renewed"]) == ["items/a", "k"]
        assert beat["lost"] == []
        only = await call(jo, "heartbeat", keys=["k", "gone"])
        assert [x["key"] for x in only["renewed"]] == ["k"]
        assert only["lost"] == [{"key": "gone", "reason": "not_held", "token": None}]
        clock.advance(3500)  # kim's calls renew only kim's leases: jo's lapse
        assert (await call(kim, "list_leases"))["leases"] == []
        await call(kim, "claim", item_id="a", takeover=True, reason="jo stopped calling")


async def test_each_connection_is_a_session(agent: Agent, clock: tenure.FakeClock) -> None:
    """Two connections under one principal exclude each other like strangers, and the calls of
    each renew only its own leases: B's claim lapses while A keeps working beside it."""
    async with agent("jo", session="A") as a, agent("jo", session="B") as b:
        assert (await call(a, "whoami"))["session"] == "A"
        for item_id in ("x", "y"):
            await call(a, "create_item", title=item_id, id=item_id)
        claim = await call(a, "claim", item_id="x", ttl_ms=3000)
        assert (claim["lease"]["holder"], claim["lease"]["session"]) == ("jo", "A")
        text = await refused(b, "claim", "lease_held", item_id="x")
        assert text.startswith("lease_held: items/x held by jo (session A) until ")
        assert "another session of yours" in text
        text = await refused(b, "release", "not_holder", item_id="x")  # only B's own claim
        assert "held by jo (session A)" in text
        await call(a, "acquire_lock", key="k", ttl_ms=3000)
        text = await refused(b, "acquire_lock", "lease_held", key="k")
        assert text.startswith("lease_held: k held by jo (session A) until ")
        await refused(b, "release_lock", "not_holder", key="k")
        mine = await call(b, "claim", item_id="y", ttl_ms=3000)
        assert mine["lease"]["session"] == "B"
        assert [x["key"] for x in (await call(b, "heartbeat"))["renewed"]] == ["items/y"]

        for _ in range(3):  # 6 s, a write of A's every 2 s: A's leases stay live, B's lapse
            clock.advance(2000)
            await call(a, "briefing")
        leases = (await call(a, "list_leases"))["leases"]
        assert {(x["key"], x["session"]) for x in leases} == {("items/x", "A"), ("k", "A")}
        assert (await call(a, "show_item", item_id="y"))["lease_state"] == "lapsed"
        beat = await call(a, "heartbeat", keys=["items/x", "items/y"])
        assert [x["key"] for x in beat["renewed"]] == ["items/x"]
        assert beat["lost"] == [{"key": "items/y", "reason": "not_held", "token": None}]
        done = await call(a, "complete", item_id="x", epoch=claim["epoch"])
        assert done["item"]["status"] == "done"


async def test_only_the_holder_completes(agent: Agent) -> None:
    async with agent("jo", session="A") as jo, agent("kim", session="K") as kim:
        await call(jo, "create_item", title="t", id="x")
        epoch = (await call(jo, "claim", item_id="x", task="fix"))["epoch"]
        text = await refused(kim, "complete", "not_holder", item_id="x", epoch=epoch)
        assert text.startswith("not_holder: items/x held by jo (session A, task fix) until ")
        await refused(kim, "progress", "not_holder", item_id="x", epoch=epoch, message="mine")
        shown = await call(kim, "show_item", item_id="x")
        assert (shown["item"]["status"], shown["item"]["progress"]) == ("in_progress", None)
        assert (await call(jo, "complete", item_id="x", epoch=epoch))["item"]["status"] == "done"


async def test_release_is_fenced_by_the_epoch(agent: Agent) -> None:
    """A late release of an older claim ends nothing; without an epoch only this session's
    own claim is released, with one any session of the holder's ends that claim."""
    async with agent("jo", session="A") as a, agent("jo", session="B") as b:
        await call(a, "create_item", title="t", id="x")
        old = (await call(a, "claim", item_id="x"))["epoch"]
        assert (await call(a, "release", item_id="x", epoch=old))["released"] is True
        new = (await call(b, "claim", item_id="x"))["epoch"]
        assert new > old
        late = await call(a, "release", item_id="x", epoch=old)
        assert late["released"] is False
        assert (late["item"]["status"], late["item"]["epoch"]) == ("in_progress", new)
        await refused(a, "release", "not_holder", item_id="x")
        shown = await call(a, "show_item", item_id="x")
        assert (shown["lease_state"], shown["lease"]["session"]) == ("live", "B")
        released = await call(a, "release", item_id="x", epoch=new)  # a reconnected agent
        assert released["released"] and released["item"]["status"] == "open"


async def test_heartbeat_takes_at_most_1000_keys(agent: Agent) -> None:
    async with agent("jo") as jo:
        text = await refused(
            jo, "heartbeat", "invalid_request", keys=[f"k{i}" for i in range(1001)]
        )
        assert "at most 1000" in text
        assert (await call(jo, "heartbeat", keys=[f"k{i}" for i in range(1000)]))["renewed"] == []
