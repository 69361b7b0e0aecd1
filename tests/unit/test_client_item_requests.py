"""The item half of the client's pure code: the requests of the ownership verbs and the
replies that carry ``revoked``, ``follow_ups`` and ``stalled``."""

from __future__ import annotations

import json
from typing import Any

from tenure.client._wire import Call, Reply, Safety, interpret
from tenure.core.claims import Briefing, Completion
from tenure.core.items import Item, ItemView
from tenure.core.models import Event, Lease
from tenure.verbs import items as iv

ITEM = Item("job", "write", "", "in_progress", 2, ("x",), None, "jo", 7, created_by="jo")
LEASE = Lease("items/job", "jo", None, 7, 30_000, 1, 2, 30_002, 0, {}, "live")


def ok(call: Call[Any], data: Any) -> Any:
    return interpret(call, Reply(200, json.loads(json.dumps(data))))


def test_reassign_posts_to_and_reason_and_is_not_repeated() -> None:
    call = iv.REASSIGN_ITEM.call(id="a/b", to="bob", reason="jo is away")
    assert (call.op, call.method, call.path) == (
        "reassign_item", "POST", "/v1/items/a%2Fb/reassign",
    )  # fmt: skip
    assert call.body == {"to": "bob", "reason": "jo is away"} and call.path_args == {"id": "a/b"}
    assert call.safety is Safety.UNSAFE  # a repeat would end the new assignee's claim
    moved = Item("job", "write", assignee="bob")
    assert ok(call, {"item": moved.to_dict()}) == moved


def test_dispatch_sends_takeover_and_reason_only_when_given() -> None:
    assert iv.DISPATCH_ITEM.call(id="42").body == {}
    body = iv.DISPATCH_ITEM.call(
        id="42", agent="r2", session="s", takeover=True, reason="r1 died"
    ).body
    assert body == {"agent": "r2", "session": "s", "takeover": True, "reason": "r1 died"}
    assert iv.DISPATCH_ITEM.call(id="42", takeover=False, reason="why").body == {"reason": "why"}


def test_complete_sends_follow_ups_a_title_alone_standing_for_an_item() -> None:
    plain = iv.COMPLETE_ITEM.call(id="42", epoch=7, result=None)
    assert plain.body == {"epoch": 7, "result": None} and plain.safety is Safety.UNSAFE
    call = iv.COMPLETE_ITEM.call(
        id="42",
        epoch=7,
        result={"ok": 1},
        op_id="op-1",
        follow_ups=["write docs", {"title": "ship", "labels": ("a",)}],
    )
    assert call.body == {
        "epoch": 7,
        "result": {"ok": 1},
        "op_id": "op-1",
        "follow_ups": [{"title": "write docs"}, {"title": "ship", "labels": ["a"]}],
    }
    assert call.safety is Safety.IDEMPOTENT  # once per op_id, follow-ups included
    assert iv.COMPLETE_ITEM.call(id="42", epoch=7, follow_ups=[]).body["follow_ups"] == []
    assert iv.COMPLETE_ITEM.call(id="42", epoch=7, follow_ups="oops").body["follow_ups"] == "oops"  # type: ignore[arg-type]


def test_create_sends_the_parent_epoch() -> None:
    body = iv.CREATE_ITEM.call(title="child", parent="job", parent_epoch=7).body
    assert body == {"title": "child", "parent": "job", "parent_epoch": 7}
    assert "parent_epoch" not in (iv.CREATE_ITEM.call(title="x").body or {})


def test_replies_carry_revoked_follow_ups_and_stalled() -> None:
    revoked = ITEM.update(revoked=True)
    assert ok(iv.GET_ITEM.call(id="job"), ItemView(revoked, None, "revoked").to_dict()) == ItemView(
        revoked, None, "revoked"
    )
    old_server = {k: v for k, v in ITEM.to_dict().items() if k != "revoked"}
    assert (
        ok(
            iv.GET_ITEM.call(id="job"), {"item": old_server, "lease": None, "lease_state": "none"}
        ).item
        == ITEM
    )

    child = Item("it-1", "docs", parent="job", created_by="jo")
    done = Completion(ITEM.update(status="done"), False, (child,))
    assert ok(iv.COMPLETE_ITEM.call(id="job", epoch=7), done.to_dict()) == done
    older = {"item": ITEM.to_dict(), "duplicate": True}  # a server without follow-ups
    assert ok(iv.COMPLETE_ITEM.call(id="job", epoch=7), older) == Completion(ITEM, True, ())

    stalled = ItemView(ITEM, LEASE, "stalled")
    event = Event(3, 4, "stalled", "items/job", "jo", None, 7, None, None, {"item": "job"})
    briefing = Briefing("jo", (stalled,), (), (event,), (), (stalled,))
    assert ok(iv.BRIEFING.call(), briefing.to_dict()) == briefing
    without = {k: v for k, v in briefing.to_dict().items() if k != "stalled"}
    assert ok(iv.BRIEFING.call(), without).stalled == ()
