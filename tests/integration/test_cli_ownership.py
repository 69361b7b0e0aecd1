"""The ownership rules at the command line, against a real server: ``tenure force-release`` (the
item stays revoked), ``tenure reassign``, ``tenure complete --follow-up``, ``tenure items add
--parent-epoch``, a takeover without a reason, item keys refused by ``tenure lock``, and
``queue``/``brief`` showing revoked and stalled claims. Each: success, refusal with its exit code
and words, and ``--json``. A subprocess costs about half a second of CPU, so jo and bob run the
CLI's entry function in the test's process (``procs.cli_inproc``); the admin's and the
supervisor's calls are real ``tenure`` subprocesses."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import tenure
from procs import Shell, doc, fails, ok, remembered, wait_for
from tenure.settings import Settings

AGO = r"(just now|\d+m?\d*s ago)"  # a moment past, in its tense

if TYPE_CHECKING:
    from conftest import LiveServer


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo", inproc=True)


@pytest.fixture
def root(shell: Callable[..., Shell]) -> Shell:
    return shell("boss", roles=("admin",))


@pytest.fixture
def jos(jo: Shell) -> Iterator[tenure.Client]:
    with tenure.Client(jo.url, token=jo.token) as client:
        yield client


def test_force_release_keeps_the_item_revoked_until_reassigned(
    shell: Callable[..., Shell], jo: Shell, root: Shell, jos: tenure.Client
) -> None:
    bob, sue = shell("bob", inproc=True), shell("sue", roles=("supervisor",))
    jos.items.create("Migrate the billing DB", id="7")
    epoch = doc(jo, "claim", "7", "--ttl", "5m")["lease"]["token"]

    # the generic lease verbs refuse the item's key, naming the item verb; nothing changes
    said = fails(root, 2, "lock", "force-release", "items/7", "--reason", "stuck")
    assert "item keys belong to items" in said and "tenure force-release 7 --reason" in said
    assert "tenure claim 7" in fails(root, 2, "lock", "acquire", "items/7")
    problem = json.loads(jo("lock", "release", "items/7", "--json").stderr)
    assert (problem["code"], problem["field"]) == ("invalid_request", "key")
    assert jos.items.get("7").lease_state == "live"

    # only an authority force-releases, with a reason
    assert "may not" in fails(bob, 1, "force-release", "7", "--reason", "mine now")
    assert "--reason" in fails(root, 2, "force-release", "7")
    assert "not found" in fails(root, 5, "force-release", "nope", "--reason", "r")
    line = ok(sue, "force-release", "7", "--reason", "jo is stuck")
    assert re.fullmatch(
        rf"7: force-released epoch {epoch}, the claim of jo \(session cli:[\w.-]+:[0-9a-f]+\); "
        r"it stays assigned to jo, revoked\n",
        line,
    ), line
    assert "no live lease" in fails(sue, 5, "force-release", "7", "--reason", "again")

    # it reads revoked; even jo needs a takeover with a reason
    mine = doc(jo, "queue")["items"]
    assert [(v["item"]["id"], v["lease_state"], v["item"]["revoked"]) for v in mine] == [
        ("7", "revoked", True)
    ]
    # revoked in the tense of the force-release, by whom and why; never "lapsed, in 27s"
    assert re.search(rf"\b7\b.*\brevoked {AGO} by sue: jo is stuck\b", ok(jo, "queue"))
    shown = ok(jo, "items", "show", "7")
    forced = rf"revoked {AGO} by sue: jo is stuck; was held by jo \(session .+\); force-rel"
    assert re.search(forced, shown) and "force_released" in shown, shown
    assert doc(jo, "items", "show", "7")["state"]["by"] == "sue"
    said = fails(jo, 3, "claim", "7")
    assert "assigned to jo, whose claim was force-released (revoked)" in said
    assert "--takeover --reason" in said
    assert "--reason" in fails(jo, 2, "claim", "7", "--takeover")
    assert "was revoked" in fails(jo, 4, "progress", "7", "still here")
    assert remembered(jo)["items/7"] == epoch

    # reassign: an authority moves it; the new assignee claims without a takeover
    assert "may not reassign" in fails(bob, 1, "reassign", "7", "bob", "--reason", "mine")
    assert "--reason" in fails(root, 2, "reassign", "7", "bob")
    assert "not found" in fails(root, 5, "reassign", "7", "nobody", "--reason", "r")
    assert jos.items.get("7").item.assignee == "jo"  # the refusals changed nothing
    assert ok(root, "reassign", "7", "bob", "--reason", "jo is away") == (
        "7: reassigned to bob; it is open\n"
    )
    # it reads reassigned (to bob, by whom, why), not lapsed, until bob claims it
    moved = doc(bob, "queue")["items"]
    assert [(v["lease_state"], v["state"]["to"], v["state"]["by"]) for v in moved] == [
        ("reassigned", "bob", "boss")
    ]
    said = rf"reassigned {AGO} to bob by boss: jo is away"
    assert re.search(rf"\b7\b.*\b{said}", ok(bob, "queue"))
    assert re.search(rf"lease +{said}; was held by jo", ok(bob, "items", "show", "7"))
    assert [v["lease_state"] for v in doc(bob, "brief")["lapsed"]] == ["reassigned"]
    claimed = doc(bob, "claim", "7")
    assert claimed["item"]["assignee"] == "bob" and claimed["lease"]["token"] > epoch
    history = doc(bob, "items", "show", "7")["transfers"]
    assert [(t["reason"], t["actor"], t["note"]) for t in history] == [
        ("claimed", "jo", None),
        ("force_released", "sue", "jo is stuck"),
        ("reassigned", "boss", "jo is away"),
        ("claimed", "bob", None),
    ]
    refused = bob("force-release", "7", "--reason", "no", "--json")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert json.loads(refused.stderr)["code"] == "forbidden"
    forced = doc(root, "force-release", "7", "--reason", "bob is needed elsewhere")
    assert (forced["item"]["assignee"], forced["item"]["revoked"]) == ("bob", True)
    assert (forced["lease"]["holder"], forced["lease"]["state"]) == ("bob", "force_released")
    moved = doc(root, "reassign", "7", "jo", "--reason", "jo is back")["item"]
    assert (moved["assignee"], moved["status"], moved["revoked"]) == ("jo", "open", False)
    assert "lease lost (force_released)" in fails(bob, 4, "renew", "7")

    doc(jo, "claim", "7")
    doc(jo, "complete", "7")
    assert "is done" in fails(root, 3, "reassign", "7", "bob", "--reason", "too late")


def test_complete_with_follow_ups_and_items_fenced_on_their_parent(
    jo: Shell, shell: Callable[..., Shell], jos: tenure.Client
) -> None:
    bob = shell("bob", inproc=True)
    jos.items.create("Release 1.4", id="rel")
    epoch = doc(jo, "claim", "rel")["lease"]["token"]

    fenced = ("--parent", "rel", "--parent-epoch", str(epoch))
    added = doc(jo, "items", "add", "Notes", *fenced)
    assert added["item"]["parent"] == "rel"
    assert ok(jo, "items", "add", "Tag", "--id", "tag", *fenced) == "added tag: Tag\n"
    stale = fails(jo, 4, "items", "add", "x", "--parent", "rel", "--parent-epoch", str(epoch + 1))
    assert f"token {epoch + 1} is stale: the current token is {epoch}" in stale
    assert "held by jo" in fails(bob, 3, "items", "add", "x", *fenced)  # not bob's epoch
    assert "parent_epoch" in fails(jo, 2, "items", "add", "x", "--parent-epoch", str(epoch))
    assert "follow_ups[1].title" in fails(
        jo, 2, "complete", "rel", "--follow-up", "fine", "--follow-up", " "
    )
    assert jos.items.get("rel").item.status == "in_progress"  # nothing completed or created

    out = ok(jo, "complete", "rel", "--follow-up", "Announce it", "--follow-up", "Ship it",
             "--op-id", "rel-done")  # fmt: skip
    lines = out.splitlines()
    assert lines[0] == "rel: done" and len(lines) == 3
    assert re.fullmatch(r"follow-up it-[0-9a-f]+: Announce it", lines[1])
    assert re.fullmatch(r"follow-up it-[0-9a-f]+: Ship it", lines[2])
    again = doc(jo, "complete", "rel", "--follow-up", "Announce it", "--follow-up", "Ship it",
                "--op-id", "rel-done", "--epoch", str(epoch))  # fmt: skip
    assert again["duplicate"] is True
    assert [f"follow-up {x['id']}: {x['title']}" for x in again["follow_ups"]] == lines[1:]
    assert all(x["parent"] == "rel" for x in again["follow_ups"])
    children = [x.title for x in jos.items.list() if x.parent == "rel"]
    assert sorted(children) == ["Announce it", "Notes", "Ship it", "Tag"]  # created once


SECTIONS = ("carrying", "stalled", "no longer live", "ready")


def test_queue_and_brief_show_stalled_and_revoked_claims(store_url: str, tmp_path: Path) -> None:
    from conftest import LiveServer as Server

    server: LiveServer = Server(store_url, Settings(db=store_url, stall_ms=300)).start()
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        jo = Shell(server.url, server.token_for("jo", "human"), tmp_path / "jo", inproc=True)
        jos = stack.enter_context(tenure.Client(server.url, token=jo.token))
        admin = stack.enter_context(tenure.Client(server.url, token=server.admin_token))
        jos.items.create("Slow work", id="slow")
        doc(jo, "brief")  # moves the cursor past the creation
        doc(jo, "claim", "slow", "--ttl", "5m")
        wait_for(lambda: jos.items.get("slow").lease_state == "stalled", what="a stall")
        assert re.search(r"\bslow\b.*\bstalled\b", ok(jo, "queue"))
        stalled = r"stalled: no progress for \d+m?\d*s, held by jo"
        assert re.search(stalled, ok(jo, "items", "show", "slow"))
        brief = doc(jo, "brief")
        assert [v["item"]["id"] for v in brief["stalled"]] == ["slow"]
        assert [v["lease_state"] for v in brief["carrying"]] == ["stalled"]

        jos.items.create("Other work", id="other")
        doc(jo, "claim", "other")
        admin.items.force_release("other", "wrong branch")
        table = ok(jo, "brief")
        titles = [x.strip() for x in table.splitlines() if x.strip() in SECTIONS]
        assert titles == ["carrying", "stalled", "no longer live"]
        revoked = rf"\bother\b.*\brevoked {AGO} by \S+: wrong branch"
        assert re.search(revoked, table.split("no longer live")[1])
        assert "force_released items/other holder=jo" in table and "reason=wrong branch" in table
