"""Every model a reply carries reads back from its own wire form: ``from_wire(to_dict())``
(through JSON, as it travels) is the model again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tenure.core.claims import Briefing, Claim, Completion, Dispatch, ItemRelease, ReadyView
from tenure.core.models import (
    Event,
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    IssuedToken,
    Lease,
    LostLease,
    Principal,
    ReleaseResult,
    RenewAllResult,
)
from tenure.core.work import Item, ItemView, Transfer

LEASE = Lease("items/it-1", "jo/agent-1", "fix", 7, 30_000, 1_000, 2_000, 32_000, 3, {"a": [1]})
EXPIRED = Lease("k", "ann", None, 2, 1_000, 10, 10, 1_010, 0, state="expired", session="s")
ITEM = Item(
    "it-1", "Fix it", "the body", "in_progress", 1, ("bug", "ui"), "it-0", "jo/agent-1", 7,
    {"message": "half", "percent": 50}, 1_500, {"ok": True}, "jo", 100, 1_500, revoked=True,
)  # fmt: skip
OPEN = Item("it-2", "Next", created_by="jo", created_at=200, updated_at=200)
TRANSFER = Transfer("it-1", None, "jo/agent-1", 7, "claimed", "jo", 1_000, "go")
VIEW = ItemView(ITEM, LEASE, "live", (TRANSFER,))
BARE = ItemView(OPEN, None, "none")
EVENT = Event(5, 1_000, "claimed", "items/it-1", "jo", None, 7, "jo", "go", {"item": "it-1"})
AGENT = Principal("jo/agent-1", "agent", (), "jo")

MODELS: list[Any] = [
    LEASE,
    EXPIRED,
    AGENT,
    Principal("root", "human", ("admin", "supervisor")),
    EVENT,
    IssuedToken(AGENT, "0123456789ab", "tnr_x", 99_000),
    IssuedToken(AGENT, "0123456789ab", "tnr_x"),
    ExtendResult(LEASE, True, False, 40_000, 40_000),
    ReleaseResult(True, LEASE),
    ReleaseResult(False, None, "no_lease"),
    ForceReleaseResult(LEASE, "root", "hung"),
    FencedWrite("k", 7, {"v": 1}, 3, True),
    FencedValue("k", 7, [1, 2], 3, 4_000),
    LostLease("k", "expired", 4),
    RenewAllResult((LEASE, EXPIRED), (LostLease("k", "not_held"),)),
    ITEM,
    OPEN,
    TRANSFER,
    VIEW,
    BARE,
    Claim(ITEM, LEASE),
    Completion(ITEM, True, (OPEN,)),
    ItemRelease(False, OPEN),
    Dispatch(ITEM, LEASE, AGENT, "tnr_secret"),
    Briefing("jo", (VIEW,), (BARE,), (EVENT,), (OPEN,), (VIEW,)),
    ReadyView((OPEN,), (VIEW,)),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_a_model_reads_back_from_its_wire_form(model: Any) -> None:
    wire = json.loads(json.dumps(model.to_dict()))
    assert type(model).from_wire(wire) == model


def test_a_dispatch_sends_the_whole_agent_with_its_token() -> None:
    """What the REST route, direct mode and ``tenure dispatch --json`` all send."""
    wire = Dispatch(ITEM, LEASE, AGENT, "tnr_secret").to_dict()
    assert wire["agent"] == {
        "name": "jo/agent-1",
        "kind": "agent",
        "roles": [],
        "parent": "jo",
        "token": "tnr_secret",
    }


def test_a_list_summary_reads_as_an_item_without_body_or_result() -> None:
    summary = {k: v for k, v in ITEM.to_dict().items() if k not in ("body", "result")}
    item = Item.from_wire(summary)
    assert (item.body, item.result) == ("", None)
    assert item.labels == ("bug", "ui")
