"""Sessions, holder-only writes, the fenced item release and register op_ids, over HTTP.

A session is one running holder under a principal (a process, a ``tenure run``, an agent's
connection): two sessions of one principal exclude each other like strangers. Fenced writes
(the register, item progress and completion) are accepted only from the principal that holds the
current token, with it; an older token is ``409 stale_token`` whoever sends it. On each backend;
the acquire and release checks also run through both fronts of those routes (the hot path and
FastAPI's route, which a ``Content-Type`` with a charset reaches).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
HOLDER = "jo/agent"  # dispatched by jo (the ancestor)
#: A content type the hot path leaves to FastAPI's route (it takes only a bare JSON type).
VIA_FASTAPI = {"content-type": "application/json; charset=utf-8"}


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


class People:
    """Clients for the holder and for every kind of non-holder."""

    def __init__(self, server: LiveServer) -> None:
        jo = server.token_for("jo", kind="human")
        tokens = {
            "holder": server.token_for(HOLDER, parent="jo"),
            "stranger": server.token_for("bob"),
            "supervisor": server.token_for("sam", kind="human", roles=("supervisor",)),
            "admin": server.admin_token,
            "ancestor": jo,
        }
        self.clients = {name: server.http(token) for name, token in tokens.items()}
        self.holder = self.clients["holder"]
        self.admin = self.clients["admin"]

    def others(self) -> Iterator[tuple[str, httpx.Client]]:
        for name, client in self.clients.items():
            if name != "holder":
                yield name, client

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


@pytest.fixture
def people(live_server: LiveServer) -> Iterator[People]:
    found = People(live_server)
    try:
        yield found
    finally:
        found.close()


@pytest.fixture(params=["hot", "fastapi"])
def post(request: pytest.FixtureRequest) -> Any:
    """``post(client, path, body)`` through the hot path or through FastAPI's route."""
    headers = VIA_FASTAPI if request.param == "fastapi" else {}

    def send(client: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
        return client.post(path, json=body, headers=headers)

    return send


def lease_of(http: httpx.Client, key: str) -> dict[str, Any]:
    lease: dict[str, Any] = ok(http.get(f"/v1/leases/{key}"))["lease"]
    return lease


# sessions --------------------------------------------------------------------------------------
def test_two_sessions_of_one_principal_exclude_each_other(post: Any, people: People) -> None:
    jo = people.holder
    body = {"key": "k", "ttl_ms": 20_000, "task": "run-1", "session": "web-1"}
    first = ok(post(jo, "/v1/leases/acquire", body))["lease"]
    assert (first["holder"], first["session"], first["task"]) == (HOLDER, "web-1", "run-1")

    other = {"key": "k", "ttl_ms": 60_000, "task": "run-2", "session": "web-2"}
    held = problem(post(jo, "/v1/leases/acquire", other), 409, "lease_held")
    assert (held["holder"], held["session"], held["task"]) == (HOLDER, "web-1", "run-1")
    assert (held["expires_at"], held["token"]) == (first["expires_at"], first["token"])
    assert "web-1" in held["detail"]
    # the default session is a session like any other
    default = problem(post(jo, "/v1/leases/acquire", {"key": "k"}), 409, "lease_held")
    assert default["session"] == "web-1"
    assert lease_of(jo, "k") == first  # task, ttl_ms, expires_at, renewals: unchanged

    again = ok(post(jo, "/v1/leases/acquire", {**body, "task": "run-1b"}))["lease"]
    assert (again["token"], again["session"], again["renewals"]) == (first["token"], "web-1", 1)
    assert again["task"] == "run-1b"


def test_another_session_long_polls_like_a_stranger(people: People) -> None:
    jo = people.holder
    first = ok(jo.post("/v1/leases/acquire", json={"key": "k", "session": "web-1"}))["lease"]
    waiting: dict[str, httpx.Response] = {}

    def wait() -> None:
        body = {"key": "k", "session": "web-2", "wait_ms": 20_000}
        waiting["reply"] = jo.post("/v1/leases/acquire", json=body)

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)
    assert "reply" not in waiting  # it waits: its own principal's other session holds the key
    ok(jo.post("/v1/leases/release", json={"key": "k", "session": "web-1"}))
    thread.join(20)
    got = ok(waiting["reply"])["lease"]
    assert got["session"] == "web-2" and got["token"] > first["token"]


def test_the_default_session_is_absent_or_empty(post: Any, people: People) -> None:
    jo = people.holder
    first = ok(post(jo, "/v1/leases/acquire", {"key": "k"}))["lease"]
    assert first["session"] == ""
    again = ok(post(jo, "/v1/leases/acquire", {"key": "k", "session": ""}))["lease"]
    assert again["token"] == first["token"] and again["renewals"] == 1
    held = problem(
        post(jo, "/v1/leases/acquire", {"key": "k", "session": "cli"}), 409, "lease_held"
    )
    assert held["session"] == ""
    assert ok(post(jo, "/v1/leases/release", {"key": "k", "session": None}))["released"] is True


def test_release_without_a_token_is_for_the_same_session(post: Any, people: People) -> None:
    jo, bob = people.holder, people.clients["stranger"]
    acquire = {"key": "k", "task": "t", "session": "web-1"}
    lease = ok(post(jo, "/v1/leases/acquire", acquire))["lease"]
    for who, session in ((jo, "web-2"), (jo, None), (bob, "web-1")):
        body = {"key": "k"} if session is None else {"key": "k", "session": session}
        refused = problem(post(who, "/v1/leases/release", body), 403, "not_holder")
        assert (refused["holder"], refused["session"]) == (HOLDER, "web-1"), refused
        assert refused["expires_at"] == lease["expires_at"] and refused["task"] == "t"
    assert lease_of(jo, "k") == lease

    # with its token, any session of the holder releases it
    done = ok(post(jo, "/v1/leases/release", {"key": "k", "token": lease["token"]}))
    assert done["released"] is True
    assert (done["lease"]["state"], done["lease"]["session"]) == ("released", "web-1")

    ok(post(jo, "/v1/leases/acquire", {"key": "k2", "session": "web-1"}))
    mine = ok(post(jo, "/v1/leases/release", {"key": "k2", "session": "web-1"}))
    assert mine["released"] is True


def test_a_bad_session_is_422_and_changes_nothing(post: Any, people: People) -> None:
    jo = people.holder
    for session in (5, ["s"], "x" * 129, "é" * 65, "a\nb", "a\tb", "a\x7fb"):
        for path in ("/v1/leases/acquire", "/v1/leases/release"):
            body = problem(post(jo, path, {"key": "k", "session": session}), 422, "invalid_request")
            assert body["field"] == "session", (session, body)
    problem(jo.get("/v1/leases/k"), 404, "not_found")
    longest = ok(post(jo, "/v1/leases/acquire", {"key": "k", "session": "é" * 64}))
    assert longest["lease"]["session"] == "é" * 64  # 128 bytes


def test_renew_all_with_a_session_renews_only_its_leases(people: People) -> None:
    jo = people.holder
    for key, session in (("a/1", "s1"), ("a/2", "s1"), ("b/1", "s2"), ("c/1", None)):
        body = {"key": key} if session is None else {"key": key, "session": session}
        ok(jo.post("/v1/leases/acquire", json=body))

    only = ok(jo.post("/v1/leases/renew-all", json={"session": "s1"}))  # the database's JSON
    assert [(x["key"], x["session"], x["renewals"]) for x in only["renewed"]] == [
        ("a/1", "s1", 1),
        ("a/2", "s1", 1),
    ]
    assert only["lost"] == []
    assert lease_of(jo, "b/1")["renewals"] == 0 and lease_of(jo, "c/1")["renewals"] == 0
    default = ok(jo.post("/v1/leases/renew-all", json={"session": ""}))["renewed"]
    assert [(x["key"], x["session"]) for x in default] == [("c/1", "")]

    listed = ok(
        jo.post("/v1/leases/renew-all", json={"keys": ["a/1", "b/1", "never"], "session": "s1"})
    )
    assert [(x["key"], x["renewals"]) for x in listed["renewed"]] == [("a/1", 2)]
    assert sorted((x["key"], x["reason"]) for x in listed["lost"]) == [
        ("b/1", "not_held"),
        ("never", "not_held"),
    ]
    unnamed = ok(jo.post("/v1/leases/renew-all", json={}))["renewed"]  # the default session's
    assert [(x["key"], x["session"]) for x in unnamed] == [("c/1", "")]
    named = ok(jo.post("/v1/leases/renew-all", json={"keys": ["a/1", "a/2", "b/1", "c/1"]}))
    assert [(x["key"], x["session"]) for x in named["renewed"]] == [
        ("a/1", "s1"),
        ("a/2", "s1"),
        ("b/1", "s2"),
        ("c/1", ""),
    ]  # named keys: any session of the caller's
    assert named["renewed"] == ok(jo.get("/v1/leases", params={"holder": HOLDER}))["leases"]
    body = problem(jo.post("/v1/leases/renew-all", json={"session": 1}), 422, "invalid_request")
    assert body["field"] == "session"


def test_claims_and_dispatch_carry_the_session(people: People) -> None:
    jo, admin = people.holder, people.admin
    for item in ("job", "other"):
        ok(admin.post("/v1/items", json={"id": item, "title": item}), 201)
    claim = ok(jo.post("/v1/items/job/claim", json={"session": "web-1", "task": "t"}))
    assert (claim["lease"]["holder"], claim["lease"]["session"]) == (HOLDER, "web-1")
    held = problem(jo.post("/v1/items/job/claim", json={"session": "web-2"}), 409, "lease_held")
    assert (held["holder"], held["session"], held["task"]) == (HOLDER, "web-1", "t")
    again = ok(jo.post("/v1/items/job/claim", json={"session": "web-1"}))
    assert again["lease"]["token"] == claim["lease"]["token"]
    assert ok(jo.get("/v1/items/job"))["lease"]["session"] == "web-1"

    sent = ok(admin.post("/v1/items/other/dispatch", json={"agent": "a1", "session": "run-9"}))
    assert (sent["lease"]["holder"], sent["lease"]["session"]) == ("root/a1", "run-9")
    assert sent["agent"]["name"] == "root/a1"


# only the holder writes -----------------------------------------------------------------------
def test_only_the_holder_writes_the_register(people: People) -> None:
    jo = people.holder
    old = ok(jo.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]
    ok(jo.post("/v1/leases/release", json={"key": "k", "token": old}))
    lease = ok(jo.post("/v1/leases/acquire", json={"key": "k", "task": "t", "session": "s"}))
    token = lease["lease"]["token"]
    ok(jo.post("/v1/fenced/write", json={"key": "k", "token": token, "value": "mine"}))

    for name, client in people.others():
        body = {"key": "k", "token": token, "value": name}
        refused = problem(client.post("/v1/fenced/write", json=body), 403, "not_holder")
        assert (refused["holder"], refused["key"]) == (HOLDER, "k"), (name, refused)
    for name, client in [("holder", jo), *people.others()]:
        body = {"key": "k", "token": old, "value": name}
        stale = problem(client.post("/v1/fenced/write", json=body), 409, "stale_token")
        assert (stale["token"], stale["current_token"]) == (old, token), (name, stale)
    read = ok(jo.get("/v1/fenced/k"))
    assert (read["value"], read["version"], read["token"]) == ("mine", 1, token)
    # another session of the holder is still the holder: the token is the principal's
    ok(jo.post("/v1/fenced/write", json={"key": "k", "token": token, "value": "again"}))
    assert ok(jo.get("/v1/fenced/k"))["version"] == 2


def test_only_the_holder_reports_progress_and_completes(people: People) -> None:
    jo, admin = people.holder, people.admin
    ok(admin.post("/v1/items", json={"id": "job", "title": "job"}), 201)
    old = ok(jo.post("/v1/items/job/claim", json={}))["lease"]["token"]
    ok(jo.post("/v1/items/job/release", json={"epoch": old}))
    epoch = ok(jo.post("/v1/items/job/claim", json={"task": "t"}))["lease"]["token"]
    before = ok(admin.get("/v1/items/job"))

    for name, client in people.others():
        for verb, body in (
            ("progress", {"epoch": epoch, "message": name}),
            ("complete", {"epoch": epoch, "result": name, "op_id": "done-1"}),
        ):
            refused = problem(client.post(f"/v1/items/job/{verb}", json=body), 403, "not_holder")
            assert (refused["holder"], refused["key"]) == (HOLDER, "items/job"), (name, refused)
    for name, client in [("holder", jo), *people.others()]:
        for verb, body in (
            ("progress", {"epoch": old, "message": name}),
            ("complete", {"epoch": old, "result": name}),
        ):
            stale = problem(client.post(f"/v1/items/job/{verb}", json=body), 409, "stale_token")
            assert (stale["token"], stale["current_token"]) == (old, epoch), (name, stale)
    assert ok(admin.get("/v1/items/job")) == before

    ok(jo.post("/v1/items/job/progress", json={"epoch": epoch, "message": "half"}))
    done = ok(jo.post("/v1/items/job/complete", json={"epoch": epoch, "op_id": "done-1"}))
    assert done["item"]["status"] == "done" and done["duplicate"] is False


def test_an_item_release_is_fenced_by_its_epoch(people: People) -> None:
    jo, admin = people.holder, people.admin
    ok(admin.post("/v1/items", json={"id": "job", "title": "job"}), 201)
    old = ok(jo.post("/v1/items/job/claim", json={}))["lease"]["token"]
    ok(jo.post("/v1/items/job/release", json={"epoch": old}))
    epoch = ok(jo.post("/v1/items/job/claim", json={"session": "web-1"}))["lease"]["token"]
    before = ok(admin.get("/v1/items/job"))

    stale = ok(jo.post("/v1/items/job/release", json={"epoch": old, "session": "web-1"}))
    assert stale == {"released": False, "item": before["item"]}
    assert ok(jo.post("/v1/items/job/release", json={"epoch": epoch + 1}))["released"] is False
    refused = problem(jo.post("/v1/items/job/release", json={}), 403, "not_holder")
    assert (refused["holder"], refused["session"]) == (HOLDER, "web-1")
    problem(
        people.clients["stranger"].post("/v1/items/job/release", json={"epoch": epoch}),
        403,
        "not_holder",
    )
    assert ok(admin.get("/v1/items/job")) == before

    # its epoch releases it from any session of the holder
    done = ok(jo.post("/v1/items/job/release", json={"epoch": epoch}))
    assert done["released"] is True
    assert (done["item"]["status"], done["item"]["assignee"]) == ("open", None)


# op_ids of the register ------------------------------------------------------------------------
def test_an_op_id_names_one_write_under_one_token(people: People) -> None:
    jo = people.holder

    def write(token: int, value: Any) -> httpx.Response:
        body = {"key": "k", "token": token, "value": value, "op_id": "op-1"}
        return jo.post("/v1/fenced/write", json=body)

    first = ok(jo.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]
    assert ok(write(first, {"v": 1}))["version"] == 1
    ok(jo.post("/v1/leases/release", json={"key": "k", "token": first}))
    second = ok(jo.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]

    fresh = ok(write(second, {"v": 2}))  # the same op_id under a newer token: a new write
    assert (fresh["version"], fresh["duplicate"], fresh["token"]) == (2, False, second)
    repeat = ok(write(second, {"v": 2}))
    assert (repeat["version"], repeat["duplicate"], repeat["value"]) == (2, True, {"v": 2})
    clash = problem(write(second, {"v": 3}), 409, "idempotency_conflict")
    assert (clash["op_id"], clash["token"], clash["version"]) == ("op-1", second, 2)
    assert clash["key"] == "k"
    # the first write, retried after the lease moved on, answers its first result
    retried = ok(write(first, {"v": 1}))
    assert (retried["version"], retried["duplicate"], retried["token"]) == (1, True, first)
    read = ok(jo.get("/v1/fenced/k"))
    assert (read["value"], read["version"], read["token"]) == ({"v": 2}, 2, second)


def test_the_openapi_document_names_the_new_fields(live_server: LiveServer) -> None:
    with live_server.http() as http:
        doc = ok(http.get("/openapi.json"))
    schemas = doc["components"]["schemas"]
    for name in ("AcquireIn", "ReleaseIn", "RenewAllIn", "ClaimIn", "DispatchIn", "ItemReleaseIn"):
        session = schemas[name]["properties"]["session"]["anyOf"][0]
        assert (session["type"], session["maxLength"]) == ("string", 128), name
    assert "epoch" in schemas["ItemReleaseIn"]["properties"]
    assert "session" in schemas["LeaseOut"]["required"]
    assert {"session", "op_id", "version"} <= schemas["Problem"]["properties"].keys()
    paths = doc["paths"]
    for path in ("/v1/fenced/write", "/v1/items/{id}/progress", "/v1/items/{id}/complete"):
        assert "403" in paths[path]["post"]["responses"], path
    assert (
        "idempotency_conflict"
        in paths["/v1/fenced/write"]["post"]["responses"]["409"]["description"]
    )
    release = paths["/v1/items/{id}/release"]["post"]["requestBody"]["content"]
    assert release["application/json"]["schema"]["$ref"].endswith("/ItemReleaseIn")
