"""The item and claim routes of SPEC §4, round trip over HTTP, on each backend.

Every route once with its reply, and the problems it documents: 404 for an unknown item,
409 ``lease_held``/``assigned_to_other``/``stale_token``/``conflict``, 403
``not_holder``/``forbidden``, 422, 413, 400 and 401. Sessions, holder-only writes and the
fenced release are in ``test_server_sessions.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from procs import wait_for

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
ITEM_FIELDS = {
    "id", "title", "body", "status", "priority", "labels", "parent", "assignee", "epoch",
    "progress", "progress_at", "result", "created_by", "created_at", "updated_at", "revoked",
    "attempts", "failures",
}  # fmt: skip
LAPSE_S = 1.1  # a claim of ttl_ms=1000 (the policy's min_ttl) has lapsed by then


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == PROBLEM
    body: dict[str, Any] = resp.json()
    assert body["code"] == code and body["status"] == status, body
    return body


def ok(resp: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/json"
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


def new_item(http: httpx.Client, **fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = ok(http.post("/v1/items", json={"title": "t", **fields}), 201)["item"]
    return item


def claim(http: httpx.Client, item_id: str, **fields: Any) -> dict[str, Any]:
    return ok(http.post(f"/v1/items/{item_id}/claim", json=fields))


def test_create_get_list_and_update(alice: httpx.Client, bob: httpx.Client) -> None:
    body = ok(alice.post("/v1/items", json={"title": "write the report"}), 201)
    assert set(body) == {"item"}
    item = body["item"]
    assert set(item) == ITEM_FIELDS
    assert item["id"].startswith("it-") and item["status"] == "open"
    assert (item["priority"], item["labels"], item["body"]) == (2, [], "")
    assert (item["assignee"], item["epoch"], item["created_by"]) == (None, 0, "alice")

    child = new_item(
        alice, id="rep-1.a", body="details", priority=0, labels=["x", "y", "x"], parent=item["id"]
    )
    assert (child["id"], child["parent"], child["labels"]) == ("rep-1.a", item["id"], ["x", "y"])
    new_item(bob, id="other", labels=["y"], priority=5, body=None)  # null is absent

    view = ok(alice.get("/v1/items/rep-1.a"))
    assert set(view) == {"item", "lease", "lease_state", "state", "transfers"}
    assert view["item"] == child and view["lease"] is None
    assert (view["lease_state"], view["transfers"]) == ("none", [])

    ids = [x["id"] for x in ok(alice.get("/v1/items"))["items"]]
    assert sorted(ids) == sorted([item["id"], "rep-1.a", "other"])
    labelled = ok(alice.get("/v1/items", params={"label": "y", "status": "open"}))["items"]
    assert sorted(x["id"] for x in labelled) == ["other", "rep-1.a"]
    assert ok(alice.get("/v1/items", params={"status": "done"}))["items"] == []
    assert len(ok(alice.get("/v1/items", params={"limit": 1}))["items"]) == 1

    edited = ok(
        bob.patch(
            "/v1/items/rep-1.a",
            json={"title": "new", "priority": 1, "labels": [], "status": "blocked"},
        )
    )
    assert edited["item"]["title"] == "new" and edited["item"]["labels"] == []
    assert (edited["item"]["priority"], edited["item"]["status"]) == (1, "blocked")
    assert ok(bob.patch("/v1/items/rep-1.a", json={}))["item"] == edited["item"]  # no change


def test_item_problems(alice: httpx.Client, live_server: LiveServer) -> None:
    new_item(alice, id="a")
    for method, path in (
        ("GET", "/v1/items/nope"),
        ("PATCH", "/v1/items/nope"),
        ("POST", "/v1/items/nope/claim"),
        ("POST", "/v1/items/nope/renew"),
        ("POST", "/v1/items/nope/release"),
    ):
        body = problem(alice.request(method, path, json={}), 404, "not_found")
        assert body["what"] == "item"
    problem(alice.post("/v1/items", json={"title": "t", "parent": "nope"}), 404, "not_found")
    # never claimed: no lease to renew or extend
    body = problem(alice.post("/v1/items/a/renew", json={}), 404, "not_found")
    assert body["what"] == "claim"
    problem(alice.post("/v1/items/a/extend", json={"by_ms": 1000}), 404, "not_found")

    taken = problem(alice.post("/v1/items", json={"id": "a", "title": "t"}), 409, "conflict")
    assert taken["field"] == "id"
    for payload, field in (
        ({"title": " "}, "title"),
        ({"title": "t", "id": "-bad"}, "id"),
        ({"title": "t", "priority": 1001}, "priority"),
        ({"title": "t", "priority": True}, "priority"),
        ({"title": "t", "labels": "x"}, "labels"),
        ({"title": "t", "assignee": "me"}, "assignee"),
        ({}, "title"),
    ):
        body = problem(alice.post("/v1/items", json=payload), 422, "invalid_request")
        assert body["field"] == field, (payload, body)
    for payload, field in (
        ({"status": "done"}, "status"),
        ({"ttl_ms": 1000}, "ttl_ms"),
    ):
        body = problem(alice.patch("/v1/items/a", json=payload), 422, "invalid_request")
        assert body["field"] == field
    problem(alice.get("/v1/items", params={"status": "weird"}), 422, "invalid_request")
    problem(alice.get("/v1/items", params={"limit": 0}), 422, "invalid_request")
    problem(alice.get("/v1/items/bad%20id"), 422, "invalid_request")
    problem(alice.post("/v1/items/a/claim", json={"ttl_ms": 10}), 422, "invalid_request")
    for payload, field in (
        ({"epoch": 0}, "epoch"),
        ({"epoch": True}, "epoch"),
        ({"session": 5}, "session"),
        ({"session": "x" * 129}, "session"),
        ({"session": "a\nb"}, "session"),
        ({"reason": "r"}, "reason"),
    ):
        body = problem(alice.post("/v1/items/a/release", json=payload), 422, "invalid_request")
        assert body["field"] == field, (payload, body)
    body = problem(alice.post("/v1/items/a/claim", json={"session": 7}), 422, "invalid_request")
    assert body["field"] == "session"
    bad = alice.post(
        "/v1/items/a/claim", content=b"{", headers={"content-type": "application/json"}
    )
    assert problem(bad, 400, "invalid_request")["field"] == "body"
    problem(alice.post("/v1/items/a/claim"), 400, "invalid_request")  # no body
    huge = alice.post("/v1/items", json={"title": "t", "body": "x" * (3 << 20)})
    problem(huge, 413, "too_large")
    claimed = claim(alice, "a")
    big = {"epoch": claimed["lease"]["token"], "result": "x" * (1 << 20)}
    body = problem(alice.post("/v1/items/a/complete", json=big), 413, "too_large")
    assert body["limit"] == 1 << 20

    with live_server.http() as anonymous:
        for method, path in (
            ("POST", "/v1/items"),
            ("GET", "/v1/items"),
            ("GET", "/v1/items/a"),
            ("PATCH", "/v1/items/a"),
            ("POST", "/v1/items/a/claim"),
            ("POST", "/v1/items/a/dispatch"),
            ("GET", "/v1/queue"),
            ("GET", "/v1/queue/alice"),
            ("GET", "/v1/ready"),
            ("GET", "/v1/briefing"),
        ):
            resp = anonymous.request(method, path, json={})
            problem(resp, 401, "unauthenticated")
            assert resp.headers["www-authenticate"].startswith("Bearer")


def test_claim_renew_extend_release(alice: httpx.Client, bob: httpx.Client) -> None:
    new_item(alice, id="job")
    body = claim(alice, "job", ttl_ms=5000, task="run-1")
    assert set(body) == {"item", "lease"}
    lease, item = body["lease"], body["item"]
    assert (lease["key"], lease["holder"], lease["task"], lease["ttl_ms"]) == (
        "items/job", "alice", "run-1", 5000,
    )  # fmt: skip
    assert (item["status"], item["assignee"], item["epoch"]) == (
        "in_progress",
        "alice",
        lease["token"],
    )

    again = claim(alice, "job", ttl_ms=6000)  # your own live claim renews, same epoch
    assert again["lease"]["token"] == lease["token"] and again["lease"]["renewals"] == 1

    held = problem(bob.post("/v1/items/job/claim", json={}), 409, "lease_held")
    assert (held["holder"], held["task"]) == ("alice", "run-1")
    assert held["expires_at"] == again["lease"]["expires_at"]
    takeover = {"takeover": True, "reason": "mine now"}  # a live claim is not taken over
    problem(bob.post("/v1/items/job/claim", json=takeover), 409, "lease_held")
    problem(bob.patch("/v1/items/job", json={"status": "in_progress"}), 409, "lease_held")
    problem(bob.patch("/v1/items/job", json={"status": "open"}), 409, "conflict")

    renewed = ok(alice.post("/v1/items/job/renew", json={"ttl_ms": 7000}))
    assert set(renewed) == {"lease"}
    assert renewed["lease"]["ttl_ms"] == 7000 and renewed["lease"]["token"] == lease["token"]
    explicit = ok(alice.post("/v1/items/job/renew", json={"epoch": lease["token"]}))
    assert explicit["lease"]["renewals"] == 3
    body = problem(bob.post("/v1/items/job/renew", json={}), 403, "not_holder")
    assert body["holder"] == "alice"
    problem(bob.post("/v1/items/job/extend", json={"by_ms": 1000}), 403, "not_holder")

    ext = ok(alice.post("/v1/items/job/extend", json={"by_ms": 60_000}))
    assert set(ext) == {"lease", "extended", "capped", "requested_until", "granted_until"}
    assert ext["extended"] and not ext["capped"]
    capped = ok(alice.post("/v1/items/job/extend", json={"by_ms": 10**12}))
    assert capped["capped"] and capped["granted_until"] < capped["requested_until"]
    same = ok(alice.post("/v1/items/job/extend", json={"until": 1}))  # never shortens
    assert not same["extended"] and same["lease"]["expires_at"] == capped["granted_until"]
    both = {"until": 1, "by_ms": 1}
    problem(alice.post("/v1/items/job/extend", json=both), 422, "invalid_request")

    problem(bob.post("/v1/items/job/release", json={}), 403, "not_holder")
    released = ok(alice.post("/v1/items/job/release", json={}))
    assert set(released) == {"released", "item"} and released["released"]
    assert (released["item"]["status"], released["item"]["assignee"]) == ("open", None)
    again_released = ok(alice.post("/v1/items/job/release", json={}))  # idempotent
    assert not again_released["released"]
    view = ok(alice.get("/v1/items/job"))
    assert [t["reason"] for t in view["transfers"]] == ["claimed", "released"]
    assert view["transfers"][0] == {
        "item": "job", "from": None, "to": "alice", "epoch": lease["token"],
        "reason": "claimed", "actor": "alice", "at": view["transfers"][0]["at"], "note": None,
        "exit_status": None,
    }  # fmt: skip

    # PATCH in_progress claims with the same rules
    claimed = ok(bob.patch("/v1/items/job", json={"status": "in_progress"}))
    assert claimed["item"]["assignee"] == "bob" and claimed["lease_state"] == "live"
    assert claimed["lease"]["holder"] == "bob"
    assert claimed["item"]["epoch"] > lease["token"]


def test_takeover_and_fenced_progress_and_completion(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    new_item(alice, id="job")
    epoch_a = claim(alice, "job", ttl_ms=1000, task="A")["lease"]["token"]
    ok(
        alice.post(
            "/v1/items/job/progress", json={"epoch": epoch_a, "message": "half", "percent": 50}
        )
    )
    time.sleep(LAPSE_S)

    lapsed = problem(bob.post("/v1/items/job/claim", json={}), 409, "assigned_to_other")
    assert (lapsed["assignee"], lapsed["lease_state"]) == ("alice", "expired")
    assert isinstance(lapsed["lapsed_at"], int)
    problem(bob.patch("/v1/items/job", json={"status": "in_progress"}), 409, "assigned_to_other")
    took = claim(bob, "job", takeover=True, reason="alice stopped answering", ttl_ms=30_000)
    epoch_b = took["lease"]["token"]
    assert epoch_b > epoch_a and took["item"]["assignee"] == "bob"

    for verb, payload in (
        ("progress", {"epoch": epoch_a, "message": "still here"}),
        ("complete", {"epoch": epoch_a, "result": {"by": "A"}, "op_id": "a-1"}),
    ):
        stale = problem(alice.post(f"/v1/items/job/{verb}", json=payload), 409, "stale_token")
        assert (stale["token"], stale["current_token"], stale["holder"]) == (
            epoch_a, epoch_b, "bob",
        )  # fmt: skip

    progressed = ok(
        bob.post(
            "/v1/items/job/progress",
            json={"epoch": epoch_b, "message": "nearly", "percent": 90, "data": {"rows": 3}},
        )
    )
    assert set(progressed) == {"item"}
    report = progressed["item"]["progress"]
    assert (report["message"], report["percent"], report["data"], report["by"]) == (
        "nearly", 90, {"rows": 3}, "bob",
    )  # fmt: skip

    done = ok(
        bob.post("/v1/items/job/complete", json={"epoch": epoch_b, "result": [1], "op_id": "b"})
    )
    assert set(done) == {"item", "duplicate", "follow_ups"} and not done["duplicate"]
    assert done["follow_ups"] == []
    assert (done["item"]["status"], done["item"]["result"], done["item"]["assignee"]) == (
        "done", [1], None,
    )  # fmt: skip
    repeat = ok(
        bob.post("/v1/items/job/complete", json={"epoch": epoch_b, "result": "x", "op_id": "b"})
    )
    assert repeat["duplicate"] and repeat["item"]["result"] == [1]

    closed = problem(bob.post("/v1/items/job/complete", json={"epoch": epoch_b}), 409, "conflict")
    assert closed["field"] == "status"
    problem(alice.post("/v1/items/job/claim", json={}), 409, "conflict")
    problem(alice.patch("/v1/items/job", json={"title": "x"}), 409, "conflict")

    view = ok(alice.get("/v1/items/job"))
    history = [(t["reason"], t["from"], t["to"], t["epoch"]) for t in view["transfers"]]
    assert history == [
        ("claimed", None, "alice", epoch_a),
        ("taken_over", "alice", "bob", epoch_b),
        ("completed", "bob", None, epoch_b),
    ]
    assert view["transfers"][1]["note"] == "alice stopped answering"


def test_cancel_and_force_release(
    alice: httpx.Client, bob: httpx.Client, admin: httpx.Client
) -> None:
    new_item(alice, id="job")
    epoch = claim(bob, "job", task="B")["lease"]["token"]
    problem(bob.post("/v1/items/job/force-release", json={"reason": "x"}), 403, "forbidden")
    problem(alice.post("/v1/items/job/force-release", json={}), 422, "invalid_request")

    forced = ok(admin.post("/v1/items/job/force-release", json={"reason": "stuck"}))
    assert set(forced) == {"item", "lease"}
    assert forced["lease"]["state"] == "force_released" and forced["lease"]["holder"] == "bob"
    assert forced["item"]["assignee"] == "bob"  # the edge stays
    stale = problem(
        bob.post("/v1/items/job/progress", json={"epoch": epoch, "message": "m"}),
        409,
        "stale_token",
    )
    assert stale["current_token"] == epoch  # the same epoch, revoked
    problem(admin.post("/v1/items/job/force-release", json={"reason": "again"}), 404, "not_found")

    with_reason = {"reason": "not needed"}
    denied = problem(
        alice.post("/v1/items/job/cancel", json=with_reason), 403, "forbidden"
    )  # bob's item now, alice is not his supervisor
    assert denied["actor"] == "alice"
    problem(bob.post("/v1/items/job/cancel", json={}), 422, "invalid_request")
    cancelled = ok(bob.post("/v1/items/job/cancel", json=with_reason))
    assert set(cancelled) == {"item"}
    assert (cancelled["item"]["status"], cancelled["item"]["assignee"]) == ("cancelled", None)
    problem(bob.post("/v1/items/job/cancel", json=with_reason), 409, "conflict")
    reasons = [t["reason"] for t in ok(alice.get("/v1/items/job"))["transfers"]]
    assert reasons == ["claimed", "force_released", "cancelled"]


def test_dispatch(live_server: LiveServer, alice: httpx.Client, bob: httpx.Client) -> None:
    new_item(alice, id="job")
    body = ok(alice.post("/v1/items/job/dispatch", json={"agent": "r1", "ttl_ms": 20_000}))
    assert set(body) == {"item", "lease", "agent"}
    agent = body["agent"]
    assert agent["name"] == "alice/r1" and agent["token"].startswith("tnr_")
    assert (agent["kind"], agent["roles"], agent["parent"]) == ("agent", [], "alice")
    assert body["lease"]["holder"] == "alice/r1" and body["item"]["assignee"] == "alice/r1"

    held = problem(alice.post("/v1/items/job/dispatch", json={}), 409, "lease_held")
    assert held["holder"] == "alice/r1"
    problem(alice.post("/v1/items/job/dispatch", json={"agent": "r1"}), 409, "conflict")
    for name in ("a b", "/x", "@x", "a" * 65):  # a principal name's rules, 64 at most
        refused = problem(
            alice.post("/v1/items/job/dispatch", json={"agent": name}), 422, "invalid_request"
        )
        assert refused["field"] == "agent", refused

    with live_server.http(agent["token"]) as r1:
        me = ok(r1.get("/v1/me"))["principal"]
        assert (me["name"], me["kind"], me["parent"]) == ("alice/r1", "agent", "alice")
        progress = {"epoch": body["lease"]["token"], "message": "on it"}
        ok(r1.post("/v1/items/job/progress", json=progress))

    mine = ok(alice.get("/v1/queue"))["items"]
    assert [(v["item"]["id"], v["lease_state"]) for v in mine] == [("job", "live")]
    problem(bob.post("/v1/items/job/force-release", json={"reason": "x"}), 403, "forbidden")
    forced = ok(alice.post("/v1/items/job/force-release", json={"reason": "redo"}))
    assert forced["lease"]["state"] == "force_released"

    new_item(alice, id="auto")
    auto = ok(alice.post("/v1/items/auto/dispatch", json={}))["agent"]["name"]
    assert auto.startswith("alice/agent-")


def test_queue_ready_and_briefing(
    live_server: LiveServer, alice: httpx.Client, bob: httpx.Client
) -> None:
    for item_id, priority in (("low", 5), ("top", 0), ("mid", 2), ("mine", 1)):
        new_item(alice, id=item_id, priority=priority)
    ok(alice.post("/v1/items/mine/claim", json={"ttl_ms": 1000}))
    ok(alice.post("/v1/items/mid/dispatch", json={"agent": "x"}))

    ready = ok(alice.get("/v1/ready"))
    assert [x["id"] for x in ready["items"]] == ["top", "low"]
    assert [x["id"] for x in ok(alice.get("/v1/ready", params={"limit": 1}))["items"]] == ["top"]

    views = ok(alice.get("/v1/queue"))["items"]
    assert sorted((v["item"]["id"], v["lease_state"]) for v in views) == [
        ("mid", "live"),
        ("mine", "live"),
    ]
    assert all(set(v) == {"item", "lease", "lease_state", "state", "transfers"} for v in views)
    assert ok(bob.get("/v1/queue/alice"))["items"] == views
    agent = ok(bob.get("/v1/queue/alice%2Fx"))["items"]
    assert [v["item"]["id"] for v in agent] == ["mid"]
    assert ok(bob.get("/v1/queue/alice/x"))["items"] == agent  # unencoded slash works too
    assert ok(bob.get("/v1/queue"))["items"] == []
    assert ok(bob.get("/v1/queue/nobody"))["items"] == []
    problem(bob.get("/v1/queue/%20"), 422, "invalid_request")

    first = ok(alice.get("/v1/briefing", params={"ready": 1}))
    assert set(first) == {
        "principal", "carrying", "lapsed", "happened", "ready", "stalled", "parked",
    }  # fmt: skip
    assert first["stalled"] == []
    assert first["principal"] == "alice"
    assert sorted(v["item"]["id"] for v in first["carrying"]) == ["mid", "mine"]
    assert [x["id"] for x in first["ready"]] == ["top"]

    time.sleep(LAPSE_S)  # alice's own claim on "mine" lapses; its `expired` event is the
    # reaper's (every 0.25 s): wait for it, or it could come after the briefing below
    expired = {"key": "items/mine", "type": "expired"}
    wait_for(lambda: ok(alice.get("/v1/events", params=expired))["events"], 5, "the expiry")
    with live_server.http(live_server.token_for("carol", roles=("supervisor",))) as carol:
        ok(carol.post("/v1/items/mid/force-release", json={"reason": "stuck agent"}))
    second = ok(alice.get("/v1/briefing"))
    assert sorted(v["item"]["id"] for v in second["lapsed"]) == ["mid", "mine"]
    assert second["carrying"] == []
    happened = [(e["type"], e["actor"]) for e in second["happened"]]
    assert ("force_released", "carol") in happened
    assert ok(alice.get("/v1/briefing"))["happened"] == []  # the cursor moved


def test_openapi_documents_the_item_routes(live_server: LiveServer) -> None:
    with live_server.http() as http:
        paths = ok(http.get("/openapi.json"))["paths"]
    expected = {
        ("/v1/items", "post"): {"201", "400", "401", "403", "404", "409", "413", "422", "429"},
        ("/v1/items", "get"): {"200", "401", "422"},
        ("/v1/items/{id}", "get"): {"200", "401", "404", "422"},
        ("/v1/items/{id}", "patch"): {
            "200", "400", "401", "403", "404", "409", "413", "422", "429",
        },
        ("/v1/items/{id}/claim", "post"): {"200", "400", "401", "404", "409", "413", "422", "429"},
        ("/v1/items/{id}/renew", "post"): {"200", "400", "401", "403", "404", "409", "413", "422"},
        ("/v1/items/{id}/extend", "post"): {"200", "400", "401", "403", "404", "409", "413", "422"},
        ("/v1/items/{id}/release", "post"): {"200", "400", "401", "403", "404", "413", "422"},
        ("/v1/items/{id}/progress", "post"): {
            "200", "400", "401", "403", "404", "409", "413", "422",
        },
        ("/v1/items/{id}/complete", "post"): {
            "200", "400", "401", "403", "404", "409", "413", "422", "429",
        },
        ("/v1/items/{id}/cancel", "post"): {"200", "400", "401", "403", "404", "409", "413", "422"},
        ("/v1/items/{id}/force-release", "post"): {
            "200", "400", "401", "403", "404", "413", "422",
        },
        ("/v1/items/{id}/dispatch", "post"): {
            "200", "400", "401", "403", "404", "409", "413", "422", "429",
        },
        ("/v1/items/{id}/reassign", "post"): {
            "200", "400", "401", "403", "404", "409", "413", "422",
        },
        ("/v1/queue", "get"): {"200", "401"},
        ("/v1/queue/{principal}", "get"): {"200", "401", "404", "422"},
        ("/v1/ready", "get"): {"200", "401", "422"},
        ("/v1/briefing", "get"): {"200", "401", "422"},
    }  # fmt: skip
    for (path, method), statuses in expected.items():
        responses = paths[path][method]["responses"]
        assert set(responses) == statuses | {"503"}, (path, method, sorted(responses))
        for status, response in responses.items():
            if status.startswith("4"):
                assert "application/problem+json" in response["content"], (path, status)


def test_every_method_of_an_item_path_is_allowed(alice: httpx.Client) -> None:
    resp = alice.request("OPTIONS", "/v1/items/a")
    problem(resp, 405, "method_not_allowed")
    assert {m.strip() for m in resp.headers["allow"].split(",")} - {"HEAD"} == {"GET", "PATCH"}
    resp = alice.delete("/v1/items")
    assert {m.strip() for m in resp.headers["allow"].split(",")} - {"HEAD"} == {"GET", "POST"}


def test_stall_threshold_comes_from_the_settings(live_server: LiveServer) -> None:
    """``TENURE_STALL_MS`` reaches the views: a live claim without progress goes ``stalled``."""
    from conftest import LiveServer as Server
    from tenure.settings import Settings

    live_server.stop()
    quick = Server(live_server.db, Settings(db=live_server.db, port=live_server.port, stall_ms=300))
    quick.start()
    try:
        with quick.http(quick.token_for("carol", kind="human")) as carol:
            new_item(carol, id="slow")
            epoch = ok(carol.post("/v1/items/slow/claim", json={"ttl_ms": 60_000}))["item"]["epoch"]
            assert ok(carol.get("/v1/queue"))["items"][0]["lease_state"] == "live"
            time.sleep(0.5)
            assert ok(carol.get("/v1/queue"))["items"][0]["lease_state"] == "stalled"
            ok(
                carol.post(
                    "/v1/items/slow/progress", json={"epoch": epoch, "message": "still here"}
                )
            )
            assert ok(carol.get("/v1/queue"))["items"][0]["lease_state"] == "live"
    finally:
        quick.stop()
