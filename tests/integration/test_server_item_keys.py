"""Item keys belong to items: the generic lease routes refuse ``items/<id>`` over HTTP.

Acquire, renew, release, extend, force-release and the fenced write, each on a claimed item's
key and on the key of no item, through every way a request reaches the service: uvicorn's
protocol (``tenure serve``'s fast path for acquire, renew and release), the ASGI hot path (what
serves them with ``--access-log``) and FastAPI's own routes (any request with a query string
falls back to them). Every answer is ``422 invalid_request`` naming the field ``key`` and the
item's own route, and nothing changes: the claim, its lease and the event log are as they were.
Reads still show item keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tenure.server.http import hotpath

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
HOT = ("/v1/leases/acquire", "/v1/leases/renew", "/v1/leases/release")
FRONTS = ("protocol", "asgi", "fastapi")
#: the item route each generic verb's refusal names
VERBS = {
    "acquire": "/claim",
    "renew": "/renew",
    "release": "/release",
    "extend": "/extend",
    "force-release": "/force-release",
    "write": "/complete",
}


def requests(key: str, token: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(verb, path, body) of every generic lease verb on ``key``."""
    return [
        ("acquire", "/v1/leases/acquire", {"key": key, "ttl_ms": 5000}),
        ("acquire", "/v1/leases/acquire", {"key": key, "wait_ms": 200}),
        ("renew", "/v1/leases/renew", {"key": key, "token": token}),
        ("release", "/v1/leases/release", {"key": key, "token": token}),
        ("release", "/v1/leases/release", {"key": key}),
        ("extend", "/v1/leases/extend", {"key": key, "token": token, "by_ms": 60_000}),
        ("force-release", "/v1/leases/force-release", {"key": key, "reason": "by hand"}),
        ("write", "/v1/fenced/write", {"key": key, "token": token, "value": {"done": True}}),
    ]


@pytest.fixture(params=FRONTS)
def server(request: pytest.FixtureRequest, live_server: LiveServer) -> Iterator[LiveServer]:
    """``live_server`` as ``tenure serve`` runs it, or with the access log on (the hot verbs
    through the ASGI hot path instead of the protocol)."""
    if request.param != "asgi":
        yield live_server
        return
    from conftest import LiveServer as Server

    live_server.stop()
    logged = Server(live_server.db, live_server.settings, access_log=True)
    logged.port, logged.url = live_server.port, live_server.url
    logged.start()
    try:
        yield logged
    finally:
        logged.stop()


def state(http: httpx.Client, item_id: str, after: int) -> dict[str, Any]:
    """Everything a refused request could have changed."""
    view = http.get(f"/v1/items/{item_id}").json()
    lease = http.get(f"/v1/leases/items/{item_id}").json()
    fenced = http.get(f"/v1/fenced/items/{item_id}").status_code
    ghost = http.get("/v1/leases/items/nothing").status_code
    events = http.get("/v1/events", params={"after": after}).json()["events"]
    return {"view": view, "lease": lease, "fenced": fenced, "ghost": ghost, "events": events}


def test_the_lease_routes_refuse_item_keys_and_change_nothing(
    server: LiveServer, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    front = request.node.callspec.params["server"]
    query = "?via=fastapi" if front == "fastapi" else ""  # a query string: FastAPI's route
    served: list[str] = []  # the requests the hot path took (the server runs in this process)
    job = hotpath.job

    def spy(st: Any, path: str, token: str, body: dict[str, Any]) -> Any:
        served.append(path)
        return job(st, path, token, body)

    monkeypatch.setattr(hotpath, "job", spy)
    alice_token = server.token_for("alice", kind="human")
    with server.http(alice_token) as alice, server.http(server.admin_token) as admin:
        assert alice.post("/v1/items", json={"id": "job", "title": "t"}).status_code == 201
        claim = alice.post("/v1/items/job/claim", json={"ttl_ms": 60_000})
        assert claim.status_code == 200, claim.text
        epoch = claim.json()["lease"]["token"]
        after = admin.get("/v1/events", params={"limit": 1000}).json()["next"]
        before = state(admin, "job", after)
        assert before["events"] == [] and before["fenced"] == before["ghost"] == 404

        served.clear()
        hot = 0
        for key, item_id in (("items/job", "job"), ("items/nothing", "nothing")):
            for verb, path, body in requests(key, epoch):
                for http in (alice, admin):
                    hot += path in HOT
                    resp = http.post(path + query, json=body)
                    assert resp.status_code == 422, (front, path, body, resp.text)
                    assert resp.headers["content-type"] == PROBLEM
                    problem = resp.json()
                    assert (problem["code"], problem["field"]) == ("invalid_request", "key")
                    assert problem["key"] == key
                    assert f"/v1/items/{item_id}{VERBS[verb]}" in problem["detail"], problem

        assert len(served) == (0 if front == "fastapi" else hot)
        assert state(admin, "job", after) == before
        # reads still show the item's lease
        listed = admin.get("/v1/leases", params={"prefix": "items/"}).json()["leases"]
        assert [(x["key"], x["token"]) for x in listed] == [("items/job", epoch)]
        assert before["lease"]["lease"]["state"] == "live"
        # and the claim still works through the item's own routes
        renewed = alice.post("/v1/items/job/renew", json={"epoch": epoch})
        assert renewed.status_code == 200 and renewed.json()["lease"]["token"] == epoch


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_openapi_document_says_so(live_server: LiveServer) -> None:
    """The lease verbs' ``key`` excludes ``items/`` (so the document is exact); reads do not."""
    with live_server.http() as http:
        doc = http.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in ("AcquireIn", "RenewIn", "ReleaseIn", "ExtendIn", "ForceReleaseIn"):
        key = schemas[name]["properties"]["key"]
        assert key["pattern"].startswith("^(?!items/)"), (name, key)
        assert "items/" in key["description"]
    assert schemas["FencedWriteIn"]["properties"]["key"]["pattern"].startswith("^(?!items/)")
    read = doc["paths"]["/v1/leases/{key}"]["get"]["parameters"][0]["schema"]
    assert "items/" not in read["pattern"]
