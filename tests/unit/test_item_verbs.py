"""The item and claim verbs are entries of the verb table: the client's requests, direct mode
and the REST routes are built from them, and the retry rules are the entries' own."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from tenure.client import _item_requests as ic
from tenure.client._wire import Call, Safety
from tenure.core.claims import Dispatch
from tenure.core.items import Item
from tenure.core.models import Lease, Principal
from tenure.server.http.app import create_app
from tenure.service import leases as service_leases
from tenure.settings import Settings
from tenure.verbs import items as iv
from tenure.verbs.items import DISPATCH_ITEM
from tenure.verbs.registry import BY_NAME
from tenure.verbs.table import PATH_PARAM

#: every request of the work queue, and whether the client may send it again after a failure
#: that left its outcome unknown
CALLS: list[tuple[Call[Any], Safety]] = [
    (iv.CREATE_ITEM.call(title="t"), Safety.UNSAFE),
    (iv.GET_ITEM.call(id="a/b"), Safety.IDEMPOTENT),
    (iv.LIST_ITEMS.call(after="1:2:x"), Safety.IDEMPOTENT),
    (iv.UPDATE_ITEM.call(id="a", title="t"), Safety.IDEMPOTENT),
    (iv.UPDATE_ITEM.call(id="a", status="in_progress"), Safety.UNSAFE),
    (iv.CLAIM_ITEM.call(id="a"), Safety.UNSAFE),
    (iv.RENEW_ITEM.call(id="a"), Safety.IDEMPOTENT),
    (iv.EXTEND_ITEM.call(id="a", by_ms=5), Safety.IDEMPOTENT),
    (ic.release_item("a"), Safety.UNSAFE),
    (ic.release_item("a", 3), Safety.IDEMPOTENT),
    (iv.PROGRESS_ITEM.call(id="a", epoch=3, message="m"), Safety.IDEMPOTENT),
    (iv.COMPLETE_ITEM.call(id="a", epoch=3), Safety.UNSAFE),
    (iv.COMPLETE_ITEM.call(id="a", epoch=3, op_id="o"), Safety.IDEMPOTENT),
    (iv.CANCEL_ITEM.call(id="a", reason="r"), Safety.UNSAFE),
    (iv.FORCE_RELEASE_ITEM.call(id="a", reason="r"), Safety.UNSAFE),
    (iv.REASSIGN_ITEM.call(id="a", to="bob", reason="r"), Safety.UNSAFE),
    (iv.DISPATCH_ITEM.call(id="a"), Safety.UNSAFE),
    (ic.queue(), Safety.IDEMPOTENT),
    (ic.queue("jo/r1"), Safety.IDEMPOTENT),
    (ic.ready(), Safety.IDEMPOTENT),
    (iv.READY_ITEMS.call(), Safety.IDEMPOTENT),
    (iv.BRIEFING.call(), Safety.UNSAFE),
]


@pytest.mark.parametrize(("call", "safety"), CALLS, ids=lambda c: getattr(c, "op", ""))
def test_each_request_is_its_verbs_route_with_its_retry_rule(
    call: Call[Any], safety: Safety
) -> None:
    verb = BY_NAME[call.op]
    assert call.method == verb.method and call.safety is safety
    route = PATH_PARAM.sub(lambda m: call.path_args[m.group(1)].replace("/", "%2F"), verb.path)
    assert call.path == route


def test_every_item_route_is_built_from_the_table() -> None:
    paths = create_app(Settings(db="sqlite:///:memory:")).openapi()["paths"]
    item_ops = {
        (path, method): op["operationId"]
        for path, methods in paths.items()
        for method, op in methods.items()
        if path.startswith(("/v1/items", "/v1/queue", "/v1/ready", "/v1/briefing"))
    }
    verbs = [v for v in BY_NAME.values() if v.tags in (iv.ITEMS.tags, iv.QUEUE.tags)]
    assert len(verbs) == len(item_ops) == 19
    for verb in verbs:
        path = verb.path.replace(":path", "")
        assert item_ops[(path, verb.method.lower())] == verb.name


def test_a_dispatch_travels_as_the_api_sends_it() -> None:
    agent = Principal("jo/r1", "agent", (), "jo")
    lease = Lease("items/a", "jo/r1", None, 1, 30_000, 1, 1, 30_001, 0, {}, "live")
    dispatch = Dispatch(Item("a", "t", assignee="jo/r1"), lease, agent, "tok-1")
    wire = DISPATCH_ITEM.wire(dispatch)
    assert isinstance(wire, dict)
    assert wire["agent"] == {
        "name": "jo/r1", "kind": "agent", "roles": [], "parent": "jo", "token": "tok-1",
    }  # fmt: skip
    assert DISPATCH_ITEM.parse(wire) == dispatch


def lease_policy_verbs(source: str) -> set[str]:
    """The verb names the lease service passes to ``_lease_policy`` (literal strings)."""
    return {
        str(node.args[1].value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "_lease_policy"
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
    }


def test_every_lease_verb_that_refuses_an_items_key_says_what_to_use_instead() -> None:
    """A generic lease verb on ``items/<id>`` is refused with the item verb to use (a 422); a
    verb missing from ``ITEM_VERBS`` would fail on the lookup instead (a 500)."""
    used = lease_policy_verbs(Path(service_leases.__file__).read_text())
    assert {"acquire", "renew", "release", "write"} <= used
    assert used - set(service_leases.ITEM_VERBS) == set()
    forgotten = 'self._lease_policy(key, "hand_over")'
    assert lease_policy_verbs(forgotten) - set(service_leases.ITEM_VERBS) == {"hand_over"}
