"""The ownership rules over HTTP, on each backend: reassign, dispatch again after a lapse,
follow-ups once per ``op_id``, ``parent_epoch`` fencing, edits of an assigned item, stalls.

Every refusal is checked to change nothing: the item, its claim and the event log stay as they
were. Who may do what, for every kind of caller, is in ``test_authz_matrix.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from procs import wait_for

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
LAPSE_S = 1.1  # a claim of ttl_ms=1000 (the policy's min_ttl) has lapsed by then


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == PROBLEM
    body: dict[str, Any] = resp.json()
    assert body["code"] == code, body
    return body


def ok(resp: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body: dict[str, Any] = resp.json()
    return body


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.admin_token) as client:
        yield client


@pytest.fixture
def alice(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.token_for("alice", kind="human")) as client:
        yield client


@pytest.fixture
def bob(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.token_for("bob")) as client:
        yield client


@pytest.fixture
def sup(live_server: LiveServer) -> Iterator[httpx.Client]:
    token = live_server.token_for("sup", kind="human", roles=("supervisor",))
    with live_server.http(token) as client:
        yield client


def cursor(http: httpx.Client) -> int:
    after: int = ok(http.get("/v1/events", params={"limit": 1000}))["next"]
    return after


def snapshot(http: httpx.Client, item_id: str, after: int) -> dict[str, Any]:
    """What a refused request must not change: the item (with its claim) and the event log."""
    return {
        "view": ok(http.get(f"/v1/items/{item_id}")),
        "items": ok(http.get("/v1/items", params={"limit": 1000}))["items"],
        "events": ok(http.get("/v1/events", params={"after": after}))["events"],
    }


def new_item(http: httpx.Client, item_id: str, **fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = ok(
        http.post("/v1/items", json={"id": item_id, "title": item_id, **fields}), 201
    )["item"]
    return item


def claim(http: httpx.Client, item_id: str, **fields: Any) -> int:
    epoch: int = ok(http.post(f"/v1/items/{item_id}/claim", json=fields))["lease"]["token"]
    return epoch


# reassign ------------------------------------------------------------------------------------
def test_reassign_ends_the_claim_and_moves_the_edge(
    alice: httpx.Client, bob: httpx.Client, sup: httpx.Client, admin: httpx.Client
) -> None:
    new_item(alice, "job")
    epoch = claim(alice, "job", ttl_ms=60_000)
    after = cursor(admin)
    before = snapshot(admin, "job", after)
    for who, body, status, code, field in (
        (bob, {"to": "bob", "reason": "mine"}, 403, "forbidden", None),  # no authority
        (alice, {"to": "bob", "reason": "yours"}, 403, "forbidden", None),  # nor the assignee
        (sup, {"to": "nobody", "reason": "r"}, 404, "not_found", None),
        (sup, {"to": "bob"}, 422, "invalid_request", "reason"),
        (sup, {"to": "bob", "reason": " "}, 422, "invalid_request", "reason"),
        (sup, {"reason": "r"}, 422, "invalid_request", "to"),
        (sup, {"to": "", "reason": "r"}, 422, "invalid_request", "to"),
        (sup, {"to": 7, "reason": "r"}, 422, "invalid_request", "to"),
        (sup, {"to": "bob", "reason": "r", "epoch": epoch}, 422, "invalid_request", "epoch"),
    ):
        refused = problem(who.post("/v1/items/job/reassign", json=body), status, code)
        assert refused.get("field") == field, refused
    problem(
        sup.post("/v1/items/nope/reassign", json={"to": "bob", "reason": "r"}), 404, "not_found"
    )
    assert snapshot(admin, "job", after) == before

    moved = ok(sup.post("/v1/items/job/reassign", json={"to": "bob", "reason": "alice is out"}))
    assert set(moved) == {"item"}
    assert (moved["item"]["assignee"], moved["item"]["revoked"]) == ("bob", False)
    view = ok(admin.get("/v1/items/job"))
    assert view["lease"]["state"] == "force_released"
    last = view["transfers"][-1]
    assert (last["reason"], last["from"], last["to"], last["actor"], last["note"]) == (
        "reassigned", "alice", "bob", "sup", "alice is out",
    )  # fmt: skip
    events = ok(admin.get("/v1/events", params={"after": after}))["events"]
    kinds = [(e["type"], e["actor"], e["reason"]) for e in events]
    assert ("force_released", "sup", "alice is out") in kinds
    assert ("reassigned", "sup", "alice is out") in kinds

    # the old epoch is dead; the new assignee claims without a takeover
    stale = {"epoch": epoch, "message": "still mine?"}
    problem(alice.post("/v1/items/job/progress", json=stale), 409, "stale_token")
    problem(alice.post("/v1/items/job/complete", json={"epoch": epoch}), 409, "stale_token")
    problem(alice.post("/v1/items/job/claim", json={}), 409, "assigned_to_other")
    new_epoch = claim(bob, "job")
    assert new_epoch > epoch
    assert ok(bob.get("/v1/items/job"))["transfers"][-1]["reason"] == "claimed"

    # a closed item is not reassigned
    ok(bob.post("/v1/items/job/complete", json={"epoch": new_epoch}))
    closed = problem(
        sup.post("/v1/items/job/reassign", json={"to": "alice", "reason": "r"}), 409, "conflict"
    )
    assert closed["field"] == "status"


# dispatch after a lapse ----------------------------------------------------------------------
def test_dispatch_takeover_after_the_agent_lapsed(
    live_server: LiveServer, alice: httpx.Client, bob: httpx.Client, admin: httpx.Client
) -> None:
    new_item(alice, "job")
    first = ok(alice.post("/v1/items/job/dispatch", json={"agent": "a1", "ttl_ms": 1000}))
    old_epoch, old_token = first["lease"]["token"], first["agent"]["token"]
    with live_server.http(old_token) as a1:
        assert ok(a1.get("/v1/me"))["principal"]["name"] == "alice/a1"
    time.sleep(LAPSE_S)  # the agent's supervisor was kill -9ed: nobody renews
    mine = ok(alice.get("/v1/queue"))["items"]
    assert [(v["item"]["id"], v["lease_state"]) for v in mine] == [("job", "lapsed")]
    assert [v["item"]["id"] for v in ok(alice.get("/v1/briefing"))["lapsed"]] == ["job"]

    def counted() -> bool:  # the reaper counts the lapsed claim as a failed attempt
        failures = ok(admin.get("/v1/items/job"))["item"]["failures"]
        return [f["reason"] for f in failures] == ["lapsed"]

    wait_for(counted, 5, "the reaper counting the lapsed claim")  # before the item is compared

    after = cursor(admin)
    before = snapshot(admin, "job", after)
    problem(alice.post("/v1/items/job/dispatch", json={}), 409, "assigned_to_other")
    refused = problem(
        alice.post("/v1/items/job/dispatch", json={"takeover": True}), 422, "invalid_request"
    )
    assert refused["field"] == "reason"
    unknown = {"takeover": True, "reason": "r", "bogus": 1}
    refused = problem(alice.post("/v1/items/job/dispatch", json=unknown), 422, "invalid_request")
    assert refused["field"] == "bogus"
    takeover = {"takeover": True, "reason": "its supervisor died"}
    problem(bob.post("/v1/items/job/dispatch", json=takeover), 403, "forbidden")
    now = snapshot(admin, "job", after)
    # nothing changed (no agent was made): the refusal without a takeover is counted as a
    # conflict, and the reaper records the lapse and ends the dead agent's token
    assert {e["type"] for e in now["events"]} <= {"expired", "token_revoked", "conflict"}
    conflicts = [e["data"]["code"] for e in now["events"] if e["type"] == "conflict"]
    assert conflicts == ["assigned_to_other"]
    assert now["view"] == before["view"] and now["items"] == before["items"]

    again = ok(alice.post("/v1/items/job/dispatch", json={"agent": "a2", **takeover}))
    assert again["agent"]["name"] == "alice/a2" and again["lease"]["holder"] == "alice/a2"
    assert again["item"]["assignee"] == "alice/a2" and again["lease"]["token"] > old_epoch
    view = ok(admin.get("/v1/items/job"))
    last = view["transfers"][-1]
    assert (last["reason"], last["from"], last["to"], last["actor"], last["note"]) == (
        "taken_over", "alice/a1", "alice/a2", "alice", "its supervisor died",
    )  # fmt: skip
    events = ok(admin.get("/v1/events", params={"after": after, "type": "dispatched"}))
    [dispatched] = events["events"]
    assert (dispatched["actor"], dispatched["holder"]) == ("alice", "alice/a2")

    # the first agent's claim ended: the reaper revokes its token
    with live_server.http(old_token) as a1:
        wait_for(lambda: a1.get("/v1/me").status_code == 401, 5, "the lapsed agent's token")
        problem(
            a1.post("/v1/items/job/complete", json={"epoch": old_epoch}), 401, "unauthenticated"
        )
    with live_server.http(again["agent"]["token"]) as a2:
        assert ok(a2.get("/v1/me"))["principal"]["name"] == "alice/a2"


# follow-ups ----------------------------------------------------------------------------------
FOLLOW_UPS = [
    {"title": "write the tests", "id": "job.tests", "priority": 1, "labels": ["qa"]},
    {"title": "tell the team", "body": "on the channel"},
]


def test_follow_ups_are_created_once_per_op_id(alice: httpx.Client, admin: httpx.Client) -> None:
    new_item(alice, "job")
    epoch = claim(alice, "job")
    after = cursor(admin)
    before = snapshot(admin, "job", after)
    for follow_ups, field in (
        ([{"title": "t", "assignee": "bob"}], "follow_ups[0].assignee"),
        ([{"title": "ok"}, {"title": " "}], "follow_ups[1].title"),
        ([{"body": "no title"}], "follow_ups[0].title"),
        ([{"title": "t", "priority": 1001}], "follow_ups[0].priority"),
        ([{"title": "t", "id": "-bad"}], "follow_ups[0].id"),
        ([{"title": "t", "labels": "x"}], "follow_ups[0].labels"),
        (["t"], "follow_ups[0]"),
        ({"title": "t"}, "follow_ups"),
        ([{"title": f"t{n}"} for n in range(101)], "follow_ups"),
        ([{"title": "a", "id": "same"}, {"title": "b", "id": "same"}], "follow_ups"),
    ):
        body = {"epoch": epoch, "op_id": "op-1", "follow_ups": follow_ups}
        refused = problem(alice.post("/v1/items/job/complete", json=body), 422, "invalid_request")
        assert refused["field"] == field, (follow_ups, refused)
    # an id that is taken: nothing is created, and the item is not completed either
    new_item(alice, "taken")
    after = cursor(admin)
    before = snapshot(admin, "job", after)
    clash = {"epoch": epoch, "follow_ups": [{"title": "a"}, {"title": "b", "id": "taken"}]}
    problem(alice.post("/v1/items/job/complete", json=clash), 409, "conflict")
    assert snapshot(admin, "job", after) == before

    body = {"epoch": epoch, "result": {"ok": True}, "op_id": "op-1", "follow_ups": FOLLOW_UPS}
    done = ok(alice.post("/v1/items/job/complete", json=body))
    assert set(done) == {"item", "duplicate", "follow_ups"} and not done["duplicate"]
    made = done["follow_ups"]
    assert [(f["title"], f["parent"], f["status"], f["created_by"]) for f in made] == [
        ("write the tests", "job", "open", "alice"),
        ("tell the team", "job", "open", "alice"),
    ]
    assert (made[0]["id"], made[0]["priority"], made[0]["labels"]) == ("job.tests", 1, ["qa"])
    assert (made[1]["body"], made[1]["priority"]) == ("on the channel", 2)

    # a retry (a lost reply) returns the same follow-ups and creates none
    again = ok(alice.post("/v1/items/job/complete", json=body))
    assert again["duplicate"] and again["follow_ups"] == made
    children = [
        i for i in ok(admin.get("/v1/items", params={"limit": 1000}))["items"] if i["parent"]
    ]
    assert sorted(i["id"] for i in children) == sorted(f["id"] for f in made)
    created = ok(admin.get("/v1/events", params={"after": after, "type": "item_created"}))
    assert sorted(e["data"]["item"] for e in created["events"]) == sorted(f["id"] for f in made)


def test_follow_ups_of_a_stale_owner_are_not_created(
    alice: httpx.Client, bob: httpx.Client, admin: httpx.Client
) -> None:
    new_item(alice, "job")
    old = claim(alice, "job", ttl_ms=1000)
    time.sleep(LAPSE_S)
    claim(bob, "job", takeover=True, reason="alice went quiet")
    after = cursor(admin)
    before = snapshot(admin, "job", after)
    body = {"epoch": old, "op_id": "late", "follow_ups": [{"title": "fan out"}]}
    problem(alice.post("/v1/items/job/complete", json=body), 409, "stale_token")
    now = snapshot(admin, "job", after)
    assert now["items"] == before["items"] and now["view"] == before["view"]


# parent_epoch --------------------------------------------------------------------------------
def test_parent_epoch_fences_the_creation_of_children(
    alice: httpx.Client, bob: httpx.Client, admin: httpx.Client
) -> None:
    new_item(alice, "parent")
    epoch = claim(alice, "parent", ttl_ms=1000)
    child = ok(
        alice.post("/v1/items", json={"title": "c1", "parent": "parent", "parent_epoch": epoch}),
        201,
    )["item"]
    assert child["parent"] == "parent"

    after = cursor(admin)
    before = snapshot(admin, "parent", after)
    for who, body, status, code, field in (
        (bob, {"title": "c", "parent": "parent", "parent_epoch": epoch}, 403, "not_holder", None),
        (alice, {"title": "c", "parent_epoch": epoch}, 422, "invalid_request", "parent_epoch"),
        (alice, {"title": "c", "parent": None, "parent_epoch": epoch}, 422, "invalid_request",
         "parent_epoch"),
        (alice, {"title": "c", "parent": "parent", "parent_epoch": 0}, 422, "invalid_request",
         "parent_epoch"),
        (alice, {"title": "c", "parent": "parent", "parent_epoch": "1"}, 422, "invalid_request",
         "parent_epoch"),
        (alice, {"title": "c", "parent": "nope", "parent_epoch": epoch}, 404, "not_found", None),
        (alice, {"title": "c", "parent": "parent", "parent_epoch": epoch + 1}, 409,
         "stale_token", None),
    ):  # fmt: skip
        refused = problem(who.post("/v1/items", json=body), status, code)
        assert refused.get("field") == field, (body, refused)
    assert snapshot(admin, "parent", after) == before

    time.sleep(LAPSE_S)
    new = claim(bob, "parent", takeover=True, reason="alice went quiet")
    stale = {"title": "late", "parent": "parent", "parent_epoch": epoch}
    refused = problem(alice.post("/v1/items", json=stale), 409, "stale_token")
    assert refused["current_token"] == new
    ok(bob.post("/v1/items", json={**stale, "title": "fresh", "parent_epoch": new}), 201)
    titles = sorted(i["title"] for i in ok(admin.get("/v1/items"))["items"] if i["parent"])
    assert titles == ["c1", "fresh"]


# edits of an assigned item -------------------------------------------------------------------
def test_only_the_assignee_or_an_authority_edits_an_assigned_item(
    alice: httpx.Client, bob: httpx.Client, sup: httpx.Client, admin: httpx.Client
) -> None:
    new_item(bob, "job")
    claim(alice, "job")
    after = cursor(admin)
    before = snapshot(admin, "job", after)
    for edit in ({"title": "mine now"}, {"priority": 0}, {"labels": ["x"]}, {"body": "b"}):
        refused = problem(bob.patch("/v1/items/job", json=edit), 403, "not_holder")
        assert refused["holder"] == "alice", refused
    both = {"title": "x", "status": "blocked"}  # one transaction: the status does not land
    problem(bob.patch("/v1/items/job", json=both), 403, "not_holder")
    assert snapshot(admin, "job", after) == before

    assert ok(alice.patch("/v1/items/job", json={"title": "by alice"}))["item"]["title"] == (
        "by alice"
    )
    assert ok(sup.patch("/v1/items/job", json={"priority": 0}))["item"]["priority"] == 0
    edited = ok(admin.get("/v1/events", params={"after": after, "type": "item_edited"}))
    assert [(e["actor"], e["data"]["fields"]) for e in edited["events"]] == [
        ("alice", ["title"]),
        ("sup", ["priority"]),
    ]
    ok(alice.post("/v1/items/job/release", json={}))
    assert ok(bob.patch("/v1/items/job", json={"title": "free again"}))["item"]["title"] == (
        "free again"
    )


# stalls --------------------------------------------------------------------------------------
def claims_gauge(http: httpx.Client) -> dict[str, float]:
    text = http.get("/metrics").text
    return {
        s.labels["state"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "tenure_claims"
    }


def test_a_stalled_claim_is_recorded_once_and_counted(live_server: LiveServer) -> None:
    """A server whose policy stalls item claims after 300 ms without progress."""
    from conftest import LiveServer as Server
    from tenure.core.policy import PolicySet
    from tenure.settings import Limits, Settings

    live_server.stop()
    policy = PolicySet().with_prefix("items/", stall_after=300)
    fresh = Limits(metrics_cache_ms=1)  # /metrics reads the database on every scrape here
    settings = Settings(db=live_server.db, port=live_server.port, policy=policy, limits=fresh)
    quick = Server(live_server.db, settings).start()
    try:
        with quick.http(quick.token_for("carol", kind="human")) as carol:
            new_item(carol, "slow")
            epoch = claim(carol, "slow", ttl_ms=60_000)
            assert claims_gauge(carol) == {"live": 1, "stalled": 0}
            stalled = {"item": "slow", "type": "stalled"}
            found = wait_for(
                lambda: ok(carol.get("/v1/events", params=stalled))["events"], 5, "the stall"
            )
            assert [(e["holder"], e["token"]) for e in found] == [("carol", epoch)]
            assert claims_gauge(carol) == {"live": 0, "stalled": 1}
            assert ok(carol.get("/v1/stats"))["stalled_claims"] == 1
            brief = ok(carol.get("/v1/briefing"))
            assert [v["item"]["id"] for v in brief["stalled"]] == ["slow"]
            assert [v["lease_state"] for v in brief["stalled"]] == ["stalled"]
            time.sleep(0.6)  # several reaper passes: the stall is recorded once
            assert len(ok(carol.get("/v1/events", params=stalled))["events"]) == 1

            # progress ends the stall (a later one would be recorded again)
            ok(carol.post("/v1/items/slow/progress", json={"epoch": epoch, "message": "back"}))
            assert claims_gauge(carol) == {"live": 1, "stalled": 0}
            assert ok(carol.get("/v1/stats"))["stalled_claims"] == 0
    finally:
        quick.stop()


# the OpenAPI document -------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_openapi_document_describes_the_ownership_rules(live_server: LiveServer) -> None:
    with live_server.http() as http:
        doc = ok(http.get("/openapi.json"))
    paths, schemas = doc["paths"], doc["components"]["schemas"]

    reassign = paths["/v1/items/{id}/reassign"]["post"]
    assert reassign["operationId"] == "reassign_item"
    body = reassign["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/ReassignIn")
    assert set(schemas["ReassignIn"]["required"]) == {"to", "reason"}
    assert schemas["ReassignIn"]["additionalProperties"] is False
    assert set(reassign["responses"]["200"]["links"]) == {"get", "claim"}
    assert "ancestor" in reassign["description"]

    patch = paths["/v1/items/{id}"]["patch"]
    assert (
        "not_holder" in patch["description"]
        and "not_holder" in patch["responses"]["403"]["description"]
    )

    follow_up = schemas["FollowUpIn"]
    assert follow_up["additionalProperties"] is False and follow_up["required"] == ["title"]
    assert set(follow_up["properties"]) == {"title", "body", "priority", "labels", "id"}
    complete = schemas["CompleteIn"]["properties"]["follow_ups"]["anyOf"][0]
    assert complete["maxItems"] == 100 and complete["items"]["$ref"].endswith("/FollowUpIn")
    assert "follow_ups" in schemas["CompletionReply"]["required"]

    # takeover needs a reason; parent_epoch needs a parent: said in JSON Schema
    for name in ("ClaimIn", "DispatchIn"):
        branches = schemas[name]["anyOf"]
        assert {"required": ["reason"], "properties": {"reason": {"type": "string"}}} in branches
    assert "takeover" in schemas["DispatchIn"]["properties"]
    assert "parent_epoch" in schemas["ItemIn"]["properties"]
    assert {"required": ["parent"], "properties": {"parent": {"type": "string"}}} in schemas[
        "ItemIn"
    ]["anyOf"]

    # the new states and reasons are in the replies' schemas
    item = schemas["ItemOut"]
    assert "revoked" in item["required"] and item["properties"]["revoked"]["type"] == "boolean"
    assert "revoked" in schemas["ItemViewOut"]["properties"]["lease_state"]["enum"]
    assert "reassigned" in schemas["TransferOut"]["properties"]["reason"]["enum"]
    assert "stalled" in schemas["BriefingReply"]["required"]
    assert "stalled_claims" in schemas["StatsReply"]["required"]
    revoke = paths["/v1/principals/{name}/tokens/{token_id}"]["delete"]
    assert "ancestor" in revoke["description"]
