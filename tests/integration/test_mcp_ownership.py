"""The ownership rules through the MCP tools (in-process client, each backend): reassign, a
revoked claim that nobody is told to claim again, stalled claims in the briefing, follow-ups of
a completion, ``parent_epoch`` on create, and the item verbs for ``items/`` keys."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from _mcp import Agent, call, in_process, refused
from mcp import Client

import tenure

pytestmark = pytest.mark.anyio
STALL_MS = 60_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service(make_service: Callable[..., tenure.Service], clock: tenure.FakeClock) -> tenure.Service:
    clock.set(int(time.time() * 1000))  # error texts word instants relative to the real now
    return make_service(tenure.PolicySet(tenure.Policy(stall_after=STALL_MS)))


@pytest.fixture
def agent(service: tenure.Service) -> Agent:
    return in_process(service)


async def advice_for(client: Client, tool: str, item_id: str, **args: object) -> str:
    """The one advice line of ``tool`` (briefing or queue) about ``item_id``."""
    advice: list[str] = (await call(client, tool, **args))["advice"]
    lines = [x for x in advice if x.startswith(item_id)]
    assert len(lines) == 1, lines
    return lines[0]


async def test_the_new_arguments_are_in_the_schemas(agent: Agent) -> None:
    async with agent("jo") as jo:
        tools = {t.name: t for t in (await jo.list_tools()).tools}
    reassign = tools["reassign"]
    assert set(reassign.input_schema["required"]) == {"item_id", "to", "reason"}
    assert "forbidden" in (reassign.description or "")
    assert reassign.annotations and reassign.annotations.destructive_hint is True
    claim = tools["claim"].input_schema["properties"]
    assert "required with takeover" in claim["reason"]["description"]
    assert "revoked" in claim["takeover"]["description"]
    assert "revoked" in (tools["claim"].description or "")
    complete = tools["complete"]
    assert "follow_ups" in complete.input_schema["properties"]
    assert "follow_ups" in (complete.output_schema or {})["properties"]
    assert "parent_epoch" in tools["create_item"].input_schema["properties"]
    for name in ("briefing", "queue"):
        text = tools[name].description or ""
        assert "revoked" in text and "advice" in text
    assert "claim them again" not in (tools["briefing"].description or "")


async def test_reassign_moves_the_item_and_kills_the_epoch(agent: Agent) -> None:
    async with (
        agent("jo", kind="human") as jo,
        agent("jo/agent-1", parent="jo") as a1,
        agent("kim/agent-1") as kim,
        agent("jo/agent-2", parent="jo") as a2,
    ):
        await call(jo, "create_item", title="fix login", id="login")
        epoch = (await call(a1, "claim", item_id="login", task="fix"))["epoch"]
        text = await refused(kim, "reassign", "forbidden", item_id="login", to="kim/agent-1",
                             reason="mine now")  # fmt: skip
        assert "kim/agent-1" in text
        await refused(jo, "reassign", "not_found", item_id="login", to="nobody", reason="x")
        await refused(jo, "reassign", "not_found", item_id="nope", to="jo/agent-2", reason="x")
        moved = await call(jo, "reassign", item_id="login", to="jo/agent-2", reason="a1 is slow")
        assert (moved["item"]["assignee"], moved["item"]["revoked"]) == ("jo/agent-2", False)

        text = await refused(a1, "progress", "stale_token", item_id="login", epoch=epoch,
                             message="still here")  # fmt: skip
        assert "stop this work" in text
        await refused(a1, "complete", "stale_token", item_id="login", epoch=epoch)
        assert (await call(a1, "ready"))["items"] == []  # assigned: not for anyone to pick
        text = await refused(a1, "claim", "assigned_to_other", item_id="login")
        assert "assigned to jo/agent-2" in text

        claim = await call(a2, "claim", item_id="login")  # plainly: no takeover needed
        assert claim["epoch"] > epoch and claim["item"]["assignee"] == "jo/agent-2"
        shown = await call(kim, "show_item", item_id="login")
        reasons = [(t["reason"], t["actor"], t["note"]) for t in shown["transfers"]]
        assert ("reassigned", "jo", "a1 is slow") in reasons
        assert reasons[-1][0] == "claimed"
        done = await call(a2, "complete", item_id="login", epoch=claim["epoch"])
        assert done["item"]["status"] == "done"
        text = await refused(jo, "reassign", "conflict", item_id="login", to="jo/agent-1",
                             reason="again")  # fmt: skip
        assert "done" in text

        no_reason = await jo.call_tool("reassign", {"item_id": "login", "to": "jo/agent-1"})
        assert no_reason.is_error  # the schema requires a reason: the SDK refuses the call


async def test_a_reassigned_claim_reads_reassigned_not_lapsed(agent: Agent) -> None:
    """A live claim moved to another assignee: the new assignee's briefing, queue and
    show_item read reassigned (to whom, by whom, why, when: in the past), never "lapsed"."""
    async with (
        agent("jo", kind="human") as jo,
        agent("jo/agent-1", parent="jo") as a1,
        agent("jo/agent-2", parent="jo") as a2,
    ):
        await call(jo, "create_item", title="fix login", id="login")
        await call(a1, "claim", item_id="login", task="fix")
        await call(jo, "reassign", item_id="login", to="jo/agent-2", reason="a1 is slow")

        brief = await call(a2, "briefing")
        [view] = brief["lapsed"]
        assert view["lease_state"] == "reassigned"
        assert (view["state"]["to"], view["state"]["by"], view["state"]["reason"]) == (
            "jo/agent-2", "jo", "a1 is slow"
        )  # fmt: skip
        assert view["state"]["at"] <= time.time() * 1000
        words = view["state_words"]
        assert words.startswith("reassigned ") and "to jo/agent-2 by jo: a1 is slow" in words
        assert " in " not in words  # a moment past, never in the future
        line = await advice_for(a2, "briefing", "login")
        assert line.startswith("login was reassigned to you by jo") and "no takeover" in line
        [queued] = (await call(jo, "queue"))["items"]
        assert (queued["lease_state"], queued["state"]) == ("reassigned", view["state"])
        assert queued["state_words"].endswith("to jo/agent-2 by jo: a1 is slow")
        shown = await call(a2, "show_item", item_id="login")
        assert (shown["lease_state"], shown["state"]["by"]) == ("reassigned", "jo")


async def test_a_revoked_claim_is_not_to_be_claimed_again(
    agent: Agent, clock: tenure.FakeClock
) -> None:
    async with (
        agent("jo/agent-3") as jo,
        agent("kim/agent-1") as kim,
        agent("root", kind="human", roles=("admin",)) as root,
    ):
        for item_id in ("stopped", "dropped"):
            await call(root, "create_item", title=item_id, id=item_id)
        await call(jo, "claim", item_id="stopped")
        await call(jo, "claim", item_id="dropped", ttl_ms=2000)
        ended = await call(root, "force_release", item_id="stopped", reason="wrong approach")
        assert ended["item"]["revoked"] is True and ended["item"]["assignee"] == "jo/agent-3"
        clock.advance(2500)  # dropped lapses: jo's calls renew only live leases

        mine = await refused(jo, "claim", "assigned_to_other", item_id="stopped")
        assert mine.startswith("assigned_to_other: items/stopped assigned to jo/agent-3, its "
                               "claim revoked: an authority force-released it")  # fmt: skip
        assert "Do not claim it again, not even with takeover" in mine
        assert "reassigned" in mine and "takeover=true and a reason" not in mine
        theirs = await refused(kim, "claim", "assigned_to_other", item_id="stopped")
        assert "Do not claim it again" in theirs
        lapsed = await refused(kim, "claim", "assigned_to_other", item_id="dropped")
        assert "takeover=true and a reason" in lapsed and "Do not claim" not in lapsed

        brief = await call(jo, "briefing")
        states = {v["item"]["id"]: v["lease_state"] for v in brief["lapsed"]}
        assert states == {"stopped": "revoked", "dropped": "lapsed"}
        assert brief["carrying"] == [] and brief["stalled"] == []
        revoked, gone = (x for x in sorted(brief["advice"], reverse=True))
        assert revoked.startswith("stopped is revoked: an authority force-released your claim")
        assert "Do not claim it again" in revoked and "claim it to go on" not in revoked
        assert gone.startswith("dropped lapsed at ") and "it is assigned to you" in gone
        assert "claim it to go on" in gone
        line = await advice_for(kim, "queue", "stopped", principal="jo/agent-3")
        assert "the claim of jo/agent-3" in line and "Do not claim it again" in line
        shown = await call(kim, "show_item", item_id="stopped")
        assert shown["lease_state"] == "revoked"
        said = shown["state_words"]  # when, by whom and why
        assert said.startswith("revoked ") and said.endswith(" by root: wrong approach"), said
        assert shown["transfers"][-1]["reason"] == "force_released"

        text = await refused(jo, "claim", "invalid_request", item_id="stopped", takeover=True)
        assert "reason" in text  # a takeover without a reason
        await call(root, "reassign", item_id="stopped", to="jo/agent-3", reason="go on after all")
        again = await call(jo, "claim", item_id="stopped")  # reassigned: plainly again
        assert again["item"]["revoked"] is False


async def test_stalled_claims_are_in_the_briefing(agent: Agent, clock: tenure.FakeClock) -> None:
    async with (
        agent("jo", kind="human") as jo,
        agent("jo/agent-1", parent="jo") as a1,
    ):
        await call(jo, "create_item", title="slow", id="slow")
        await call(jo, "create_item", title="mine", id="mine")
        await call(a1, "claim", item_id="slow", ttl_ms=120_000)
        await call(jo, "claim", item_id="mine", ttl_ms=120_000)
        clock.advance(STALL_MS + 1000)
        own = await call(a1, "briefing")
        assert [v["item"]["id"] for v in own["stalled"]] == ["slow"]
        assert [v["item"]["id"] for v in own["carrying"]] == ["slow"]  # live all the same
        (line,) = own["advice"]
        assert line.startswith("slow is stalled: your claim is live but reported no progress")
        assert "report progress" in line

        brief = await call(jo, "briefing")
        assert {v["item"]["id"]: v["lease_state"] for v in brief["stalled"]} == {
            "slow": "stalled", "mine": "stalled",
        }  # fmt: skip
        theirs = await advice_for(jo, "briefing", "slow")
        assert "the claim of jo/agent-1 is live" in theirs and "force_release" in theirs
        epoch = (await call(jo, "show_item", item_id="mine"))["item"]["epoch"]
        await call(jo, "progress", item_id="mine", epoch=epoch, message="on it")
        brief = await call(jo, "briefing")
        assert [v["item"]["id"] for v in brief["stalled"]] == ["slow"]


async def test_complete_creates_follow_ups_once(agent: Agent) -> None:
    async with agent("jo") as jo:
        await call(jo, "create_item", title="audit", id="audit")
        epoch = (await call(jo, "claim", item_id="audit"))["epoch"]
        follow_ups = [
            {"title": "fix the login form", "priority": 1, "labels": ["web"], "id": "form"},
            {"title": "write the report", "body": "for **ops**"},
        ]
        text = await refused(jo, "complete", "invalid_request", item_id="audit", epoch=epoch,
                             follow_ups=[{"title": "bad", "id": "no spaces"}])  # fmt: skip
        assert "follow_ups[0].id" in text
        assert (await call(jo, "show_item", item_id="audit"))["item"]["status"] == "in_progress"

        done = await call(jo, "complete", item_id="audit", epoch=epoch, op_id="c1",
                          follow_ups=follow_ups)  # fmt: skip
        made = done["follow_ups"]
        assert [(f["title"], f["parent"], f["status"]) for f in made] == [
            ("fix the login form", "audit", "open"), ("write the report", "audit", "open"),
        ]  # fmt: skip
        assert (made[0]["id"], made[0]["priority"], made[0]["labels"]) == ("form", 1, ["web"])
        assert made[1]["body"] == "for **ops**" and made[1]["id"].startswith("it-")
        again = await call(jo, "complete", item_id="audit", epoch=epoch, op_id="c1",
                           follow_ups=follow_ups)  # fmt: skip
        assert again["duplicate"] is True
        assert [f["id"] for f in again["follow_ups"]] == [f["id"] for f in made]
        ready = {i["id"] for i in (await call(jo, "ready"))["items"]}
        assert ready == {f["id"] for f in made}


async def test_a_superseded_owner_neither_completes_nor_fans_out(
    agent: Agent, clock: tenure.FakeClock
) -> None:
    async with agent("jo") as jo, agent("kim") as kim:
        await call(jo, "create_item", title="epic", id="epic")
        old = (await call(jo, "claim", item_id="epic", ttl_ms=2000))["epoch"]
        sub = await call(jo, "create_item", title="part 1", parent="epic", parent_epoch=old)
        assert sub["item"]["parent"] == "epic"
        text = await refused(jo, "create_item", "invalid_request", title="x", parent_epoch=old)
        assert "parent_epoch" in text
        await refused(kim, "create_item", "not_holder", title="mine", parent="epic",
                      parent_epoch=old)  # fmt: skip
        clock.advance(2500)
        await call(kim, "claim", item_id="epic", takeover=True, reason="jo stopped")
        await refused(jo, "create_item", "stale_token", title="part 2", parent="epic",
                      parent_epoch=old)  # fmt: skip
        await refused(jo, "complete", "stale_token", item_id="epic", epoch=old,
                      follow_ups=[{"title": "more"}])  # fmt: skip
        ready = [i["title"] for i in (await call(kim, "ready"))["items"]]
        assert ready == ["part 1"]


async def test_item_keys_go_to_the_item_verbs(agent: Agent) -> None:
    async with agent("jo") as jo, agent("root", kind="human", roles=("admin",)) as root:
        await call(jo, "create_item", title="t", id="a")
        epoch = (await call(jo, "claim", item_id="a"))["epoch"]
        text = await refused(jo, "acquire_lock", "invalid_request", key="items/a")
        assert text.startswith("invalid_request: key items/a is the claim of item 'a'")
        assert "use the item tools with item_id=a" in text.lower()
        await refused(jo, "renew_lock", "invalid_request", key="items/a", token=epoch)
        await refused(jo, "release_lock", "invalid_request", key="items/a")
        ended = await call(root, "force_release", key="items/a", reason="stuck")
        assert ended["item"]["id"] == "a" and ended["item"]["revoked"] is True
        assert ended["lease"]["state"] == "force_released"
        shown = await call(jo, "show_item", item_id="a")
        assert (shown["lease_state"], shown["transfers"][-1]["reason"]) == (
            "revoked", "force_released",
        )  # fmt: skip
