"""Everything stored reads back, over HTTP against a real server: a JSON value nested deeper
than the bound (or holding a NUL) is refused at the door with ``422`` naming the field, on the
hot path and on FastAPI's, nothing changes, and every listing still answers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

from tenure.core.validate import MAX_JSON_DEPTH

if TYPE_CHECKING:
    from conftest import LiveServer


def nested(levels: int) -> Any:
    value: Any = {}
    for n in range(levels - 1):
        value = {"a": value} if n % 2 else [value]
    return value


DEEP = nested(600)  # ~1.2 KB: small enough for the hot path and for max_meta_bytes
JUST_TOO_DEEP = nested(MAX_JSON_DEPTH + 1)
ALMOST = {"a": nested(MAX_JSON_DEPTH - 1)}  # exactly MAX_JSON_DEPTH levels
SLOW_PATH = {"content-type": "application/json; charset=utf-8"}  # not the hot path's


def refused(reply: httpx.Response, field: str) -> None:
    assert reply.status_code == 422, reply.text
    problem = reply.json()
    assert problem["code"] == "invalid_request" and problem["field"] == field, problem


def state(http: httpx.Client, admin: httpx.Client) -> tuple[Any, ...]:
    leases = http.get("/v1/leases")
    items = http.get("/v1/items")
    events = admin.get("/v1/events", params={"limit": 1000})
    for reply in (leases, items, events):
        assert reply.status_code == 200, reply.text
    return leases.json(), items.json(), events.json()


def test_deep_or_nul_json_is_refused_at_the_door_and_listings_still_work(
    live_server: LiveServer,
) -> None:
    jo = live_server.http(live_server.token_for("jo"))
    admin = live_server.http(live_server.admin_token)
    lease = jo.post("/v1/leases/acquire", json={"key": "jobs/ok", "meta": ALMOST}).json()["lease"]
    assert lease["meta"] == ALMOST
    item = jo.post("/v1/items", json={"title": "work"}).json()["item"]
    epoch = jo.post(f"/v1/items/{item['id']}/claim", json={}).json()["lease"]["token"]
    before = state(jo, admin)

    refusals: list[tuple[str, dict[str, Any], dict[str, str] | None, str]] = [
        ("/v1/leases/acquire", {"key": "jobs/deep", "meta": {"m": DEEP}}, None, "meta"),
        ("/v1/leases/acquire", {"key": "jobs/deep", "meta": {"m": DEEP}}, SLOW_PATH, "meta"),
        ("/v1/leases/acquire", {"key": "jobs/deep", "meta": JUST_TOO_DEEP}, None, "meta"),
        ("/v1/leases/acquire", {"key": "jobs/nul", "meta": {"m": "a\x00b"}}, None, "meta"),
        (
            "/v1/fenced/write",
            {"key": "jobs/ok", "token": lease["token"], "value": DEEP},
            None,
            "value",
        ),
        (
            "/v1/fenced/write",
            {"key": "jobs/ok", "token": lease["token"], "value": ["\x00"]},
            None,
            "value",
        ),
        (
            f"/v1/items/{item['id']}/progress",
            {"epoch": epoch, "message": "m", "data": {"d": DEEP}},
            None,
            "data",
        ),
        (
            f"/v1/items/{item['id']}/progress",
            {"epoch": epoch, "message": "m", "data": {"d": "\x00"}},
            None,
            "data",
        ),
        (f"/v1/items/{item['id']}/complete", {"epoch": epoch, "result": DEEP}, None, "result"),
    ]
    for path, body, headers, field in refusals:
        refused(jo.post(path, content=json.dumps(body), headers=headers), field)
        assert state(jo, admin) == before, path

    # a body nested far deeper than any parser's recursion: a 4xx, never a 500
    huge = b'{"key": "jobs/deep", "meta": {"m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    reply = jo.post(
        "/v1/leases/acquire", content=huge, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 400, reply.text
    assert (reply.json()["code"], reply.json()["field"]) == ("invalid_request", "body")
    assert state(jo, admin) == before

    # what was accepted, at the bound, reads back everywhere
    assert jo.get("/v1/leases/jobs/ok").json()["lease"]["meta"] == ALMOST
    written = jo.post(
        "/v1/fenced/write", json={"key": "jobs/ok", "token": lease["token"], "value": ALMOST}
    )
    assert written.status_code == 200, written.text
    assert jo.get("/v1/fenced/jobs/ok").json()["value"] == ALMOST
    forced = admin.post("/v1/leases/force-release", json={"key": "jobs/ok", "reason": "test"})
    assert forced.status_code == 200 and forced.json()["lease"]["meta"] == ALMOST
    assert jo.get("/v1/leases").status_code == 200
