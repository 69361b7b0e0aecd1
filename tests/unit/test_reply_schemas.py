"""One description per wire type: a reply's schema is derived from the core model it sends, so
a field added to the model is in the schema (required, as ``to_dict`` always sends it), and
each derived schema holds exactly what the model's ``to_dict`` sends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from tenure.core import models as m
from tenure.core.claims import Briefing, Claim, Completion, ItemRelease
from tenure.core.items import Item, ItemView, Transfer
from tenure.core.token_floor import TokenFloor
from tenure.core.work import Failure
from tenure.verbs import replies as r
from tenure.verbs.registry import VERBS
from tenure.verbs.schema import DERIVED, Out, wire_model

LEASE = m.Lease("jobs/a", "jo", "nightly", 7, 30_000, 1, 2, 30_002, 1, {"n": 1}, "live", "s1")
PRINCIPAL = m.Principal("jo/r1", "agent", ("supervisor",), "jo")
TOKEN = m.TokenInfo("0123456789ab", 1, None, 5)
ITEM = Item("a", "t", "body", "in_progress", 2, ("x",), None, "jo", 7, {"m": "half"}, 3, None)
VIEW = ItemView(ITEM, LEASE, "live", (Transfer("a", None, "jo", 7, "claimed", "jo", 1),))

#: one value of each core model whose reply schema is derived
SAMPLES: list[Any] = [
    LEASE,
    m.LostLease("jobs/b", "expired", 3),
    m.RenewAllResult((LEASE,), (m.LostLease("jobs/b", "expired", None),)),
    m.ReleaseAllResult((LEASE,)),
    m.ExtendResult(LEASE, True, False, 40_000, 40_000),
    m.ReleaseResult(False, LEASE, "stale_token"),
    m.ReleaseResult(True, LEASE),
    m.ForceReleaseResult(LEASE, "admin", "stuck"),
    m.FencedWrite("jobs/a", 7, {"rows": 1}, 3, True, writer="jo"),
    m.FencedValue("jobs/a", 7, [1, 2], 3, 9),
    m.Event(1, 2, "acquired", "jobs/a", "jo", None, 7, None, None, {"a": 1}),
    PRINCIPAL,
    m.IssuedToken(PRINCIPAL, "0123456789ab", "tnr_secret", None),
    TOKEN,
    m.PrincipalInfo(PRINCIPAL, (TOKEN,)),
    m.RemovedPrincipal(PRINCIPAL, ("0123456789ab",)),
    TokenFloor(10, 12),
    ITEM,
    Transfer("a", "jo", "bo", 8, "taken_over", "bo", 2, "jo stalled"),
    Failure(7, "command_exited", 9, 1),
    ITEM.update(
        status="parked",
        attempts=2,
        failures=(Failure(6, "lapsed", 5), Failure(7, "command_exited", 9, 1)),
    ),
    VIEW,
    ItemView(ITEM, None, "lapsed"),
    Claim(ITEM, LEASE),
    ItemRelease(True, ITEM),
    Completion(ITEM, False, (ITEM,)),
    Briefing(
        "jo",
        (VIEW,),
        (),
        (m.Event(1, 2, "claimed", "items/a", "jo", None, 7, None, None),),
        (ITEM,),
        (VIEW,),
    ),
]


def test_every_derived_schema_has_a_sample() -> None:
    """With the verb table loaded, every reply schema derived from a core model is checked."""
    assert VERBS and set(DERIVED) == {type(sample) for sample in SAMPLES}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: type(s).__name__)
def test_a_reply_is_exactly_its_models_to_dict(sample: Any) -> None:
    model = DERIVED[type(sample)]
    sent = sample.to_dict()
    # the same fields in the same order (MCP's structured output keeps the schema's)
    assert list(sent) == [f.alias or name for name, f in model.model_fields.items()]
    assert model.model_validate(sent).model_dump(mode="json", by_alias=True) == sent
    assert all(f.is_required() for f in model.model_fields.values())


def test_a_field_added_to_a_core_model_is_in_its_schema_required() -> None:
    @dataclass(frozen=True)
    class Transfer:
        key: str
        to: str | None
        leases: tuple[m.Lease, ...]
        kind: Literal["move", "copy"] = "move"

    try:
        model = wire_model(Transfer, "TransferReply", describe={"to": "the new holder"})
    finally:
        DERIVED.pop(Transfer, None)  # a scratch model: not one of the API's
    schema = model.model_json_schema()
    assert list(schema["properties"]) == ["key", "to", "leases", "kind"]
    assert schema["required"] == ["key", "to", "leases", "kind"]
    assert schema["properties"]["to"]["description"] == "the new holder"
    assert schema["properties"]["kind"]["enum"] == ["move", "copy"]
    assert schema["additionalProperties"] is False
    with pytest.raises(ValidationError):  # a field the model does not have
        model.model_validate({"key": "k", "to": None, "leases": [], "kind": "move", "x": 1})
    # a nested core model is its own reply's schema
    assert model.model_fields["leases"].annotation == list[r.LeaseOut]
    assert issubclass(model, Out)
