"""The pieces that let ``/mcp`` and ``tenure mcp`` run the same client: the connection's session
accepted only in the server's own in-process requests, the policy's bounds read back from a
server's OpenAPI document, and a list's summaries read by the client with their body's
length."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tenure.compose import create_app
from tenure.core.items import Item
from tenure.core.policy import Policy, PolicySet
from tenure.mcp.server import openapi_bounds, policy_bounds
from tenure.mcp.summaries import ItemSummaryOut
from tenure.settings import Settings
from tenure.verbs.fields import CONNECTION_SESSION
from tenure.verbs.leases import AcquireIn
from tenure.verbs.summaries import item_summary

MINE = "mcp-http:0123456789abcdef01234567"


def test_a_connections_session_is_refused_from_a_client() -> None:
    with pytest.raises(ValidationError, match="mcp-http:"):
        AcquireIn.model_validate({"key": "k", "session": MINE})


def test_the_in_process_request_of_that_connection_may_name_it() -> None:
    mark = CONNECTION_SESSION.set(MINE)
    try:
        assert AcquireIn.model_validate({"key": "k", "session": MINE}).session == MINE
        with pytest.raises(ValidationError, match="mcp-http:"):  # another connection's: no
            AcquireIn.model_validate({"key": "k", "session": MINE[:-1] + "8"})
    finally:
        CONNECTION_SESSION.reset(mark)
    with pytest.raises(ValidationError, match="mcp-http:"):
        AcquireIn.model_validate({"key": "k", "session": MINE})


@pytest.mark.parametrize(
    "policy",
    [
        PolicySet(),
        PolicySet(Policy(min_ttl=2000, max_ttl=120_000, max_key_bytes=300)),
        PolicySet(Policy(max_ttl=50_000)).with_prefix("slow/", max_ttl=900_000),
    ],
)
def test_a_servers_openapi_states_its_policys_bounds(policy: PolicySet, tmp_path: Path) -> None:
    app = create_app(Settings(db=f"sqlite:///{tmp_path}/t.db", policy=policy))
    assert openapi_bounds(app.openapi()) == policy_bounds(policy)


def test_a_document_without_them_states_none() -> None:
    assert openapi_bounds({"paths": {}}) == {}
    assert openapi_bounds([]) == {}


def test_a_summary_read_by_the_client_keeps_the_bodys_length() -> None:
    whole = Item("a", "t", body="b" * 40, labels=("x",))
    listed = Item.from_wire(item_summary(whole))
    assert (listed.body, listed.body_chars) == ("", 40)
    assert Item.from_wire(whole.to_dict()).body_chars is None  # whole: the body says
    assert listed == whole.update(body="") and "body_chars" not in listed.to_dict()
    assert ItemSummaryOut.of(listed).body_chars == ItemSummaryOut.of(whole).body_chars == 40
