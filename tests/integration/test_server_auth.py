"""Authentication and principals over HTTP, on each backend (SPEC §1, §2.5, §4).

Every ``/v1`` route wants a bearer token; the holder and the actor of whatever a request does is
the principal the token authenticates, never a field of the body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import pytest

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
FAKE_TOKEN = "tnr_0123456789ab_" + "A" * 43  # well formed, never issued

# (method, path, body): one request per authenticated route
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/leases/acquire", {"key": "k"}),
    ("POST", "/v1/leases/renew", {"key": "k", "token": 1}),
    ("POST", "/v1/leases/renew-all", {}),
    ("POST", "/v1/leases/extend", {"key": "k", "token": 1, "by_ms": 1000}),
    ("POST", "/v1/leases/release", {"key": "k"}),
    ("POST", "/v1/leases/force-release", {"key": "k", "reason": "r"}),
    ("GET", "/v1/leases", None),
    ("GET", "/v1/leases/k", None),
    ("POST", "/v1/fenced/write", {"key": "k", "token": 1, "value": 1}),
    ("GET", "/v1/fenced/k", None),
    ("GET", "/v1/events", None),
    ("GET", "/v1/me", None),
    ("POST", "/v1/principals", {"name": "x"}),
    ("DELETE", "/v1/principals/root/tokens/0123456789ab", None),
]


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == PROBLEM
    body: dict[str, Any] = resp.json()
    assert body["code"] == code and body["status"] == status, body
    assert body["type"].endswith(code) and body["title"] and body["detail"]
    return body


def send(client: httpx.Client, method: str, path: str, body: dict[str, Any] | None) -> Any:
    return client.request(method, path, json=body)


def principal_exists(live_server: LiveServer, name: str) -> bool:
    store = tenure.open_store(live_server.db)
    try:
        return store.get_principal(name) is not None
    finally:
        store.close()


def test_every_route_wants_a_token(live_server: LiveServer) -> None:
    with live_server.http() as anonymous:
        for method, path, body in ROUTES:
            resp = send(anonymous, method, path, body)
            problem(resp, 401, "unauthenticated")
            challenge = resp.headers["www-authenticate"]
            assert challenge.startswith("Bearer realm="), (method, path, challenge)
            assert "invalid_token" not in challenge


BAD_AUTHORIZATIONS = [
    "Bearer nope",
    "Bearer tnr_",
    "Bearer",
    f"Bearer {FAKE_TOKEN}",
    f"Bearer {FAKE_TOKEN}x",
    f"Bearer {FAKE_TOKEN[:-1]}",
    f"Bearer {FAKE_TOKEN} {FAKE_TOKEN}",
    f"Basic {FAKE_TOKEN}",
    FAKE_TOKEN,
]


def cursor(live_server: LiveServer) -> int:
    """The event log's cursor now (its principals' bookkeeping events are before it)."""
    with live_server.http(live_server.admin_token) as admin:
        after: int = admin.get("/v1/events", params={"limit": 1000}).json()["next"]
        return after


def test_malformed_and_unknown_tokens_are_401(live_server: LiveServer) -> None:
    after = cursor(live_server)
    with httpx.Client(base_url=live_server.url, timeout=30) as client:
        for authorization in BAD_AUTHORIZATIONS:
            headers = {"Authorization": authorization}
            resp = client.get("/v1/me", headers=headers)
            problem(resp, 401, "unauthenticated")
            assert resp.headers["www-authenticate"].startswith("Bearer"), authorization
            held = client.post("/v1/leases/acquire", json={"key": "k"}, headers=headers)
            problem(held, 401, "unauthenticated")
    with live_server.http(live_server.admin_token) as admin:
        problem(admin.get("/v1/leases/k"), 404, "not_found")  # nothing was leased on the way
        assert admin.get("/v1/events", params={"after": after}).json()["events"] == []


def test_every_front_reads_the_bearer_header_the_same_way(live_server: LiveServer) -> None:
    """A lower-case scheme and blanks before the token: the routes, the hot path and /mcp all
    accept it (they used to disagree: the routes kept the blanks in the token)."""
    token = live_server.token_for("blanks")
    headers = {"Authorization": f"bearer   {token}"}
    with httpx.Client(base_url=live_server.url, timeout=30, headers=headers) as client:
        assert client.get("/v1/me").json()["principal"]["name"] == "blanks"
        acquired = client.post("/v1/leases/acquire", json={"key": "blanks/k"})
        assert acquired.status_code == 200, acquired.text
        assert acquired.json()["lease"]["holder"] == "blanks"


def test_a_rejected_bearer_token_is_named_in_the_challenge(live_server: LiveServer) -> None:
    with live_server.http(FAKE_TOKEN) as client:
        resp = client.get("/v1/me")
    problem(resp, 401, "unauthenticated")
    assert 'error="invalid_token"' in resp.headers["www-authenticate"]


def test_admin_creates_a_principal_whose_token_works(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        resp = admin.post(
            "/v1/principals", json={"name": "jo", "kind": "human", "roles": ["supervisor"]}
        )
        assert resp.status_code == 201, resp.text
        out = resp.json()
        assert set(out) == {"principal", "token", "token_id", "expires_at"}
        assert out["expires_at"] is None  # no ttl_ms: the token never expires
        assert out["principal"] == {
            "name": "jo",
            "kind": "human",
            "roles": ["supervisor"],
            "parent": None,
        }
        assert out["token"].startswith(f"tnr_{out['token_id']}_")
        child = admin.post("/v1/principals", json={"name": "jo/reviewer-1", "parent": "jo"})
        assert child.status_code == 201, child.text
        assert child.json()["principal"] == {
            "name": "jo/reviewer-1",
            "kind": "agent",
            "roles": [],
            "parent": "jo",
        }
    with live_server.http(out["token"]) as jo:
        me = jo.get("/v1/me")
        assert me.status_code == 200
        assert me.json() == {"principal": out["principal"]}
    with live_server.http(child.json()["token"]) as reviewer:
        assert reviewer.get("/v1/me").json()["principal"]["parent"] == "jo"


def test_an_existing_name_gets_another_token(live_server: LiveServer) -> None:
    first = live_server.token_for("jo", kind="human")
    with live_server.http(live_server.admin_token) as admin:
        resp = admin.post("/v1/principals", json={"name": "jo"})
    assert resp.status_code == 201
    second = resp.json()["token"]
    assert second != first
    assert resp.json()["principal"]["kind"] == "human"  # the principal is unchanged
    for token in (first, second):
        with live_server.http(token) as jo:
            assert jo.get("/v1/me").json()["principal"]["name"] == "jo"


@pytest.mark.parametrize("roles", [(), ("supervisor",)], ids=["plain", "supervisor"])
def test_only_admins_create_principals(live_server: LiveServer, roles: tuple[str, ...]) -> None:
    token = live_server.token_for("jo", roles=roles)
    with live_server.http(token) as jo:
        body = problem(jo.post("/v1/principals", json={"name": "mallory"}), 403, "forbidden")
    assert body["actor"] == "jo"
    assert not principal_exists(live_server, "mallory")


def test_a_missing_parent_is_404_and_creates_nothing(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        resp = admin.post("/v1/principals", json={"name": "orphan", "parent": "nobody"})
    body = problem(resp, 404, "not_found")
    assert "nobody" in body["detail"]
    assert not principal_exists(live_server, "orphan")


BAD_PRINCIPALS: list[tuple[dict[str, Any], str]] = [
    ({"name": "-starts-with-a-dash"}, "name"),
    ({"name": "has space"}, "name"),
    ({"name": "jo\n"}, "name"),
    ({"name": "x" * 129}, "name"),
    ({"name": 7}, "name"),
    ({"name": "jo", "kind": "robot"}, "kind"),
    ({"name": "jo", "roles": ["root"]}, "roles[0]"),
    ({"name": "jo", "roles": "admin"}, "roles"),
    ({"name": "jo", "parent": "bad parent"}, "parent"),
    ({"name": "jo", "token": "mine"}, "token"),
    ({}, "name"),
]


def test_bad_principal_fields_are_422_and_create_nothing(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        for body, field in BAD_PRINCIPALS:
            out = problem(admin.post("/v1/principals", json=body), 422, "invalid_request")
            assert out["field"] == field, (body, out)
    assert not principal_exists(live_server, "jo")


def test_revoking_a_token_makes_it_401(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        made = admin.post("/v1/principals", json={"name": "jo/reviewer-1"}).json()
        other = admin.post("/v1/principals", json={"name": "jo/reviewer-1"}).json()
        path = f"/v1/principals/{quote(made['principal']['name'], safe='')}/tokens/"
        with live_server.http(made["token"]) as reviewer:
            assert reviewer.get("/v1/me").status_code == 200
            # the hot path has seen the token (a server may keep its principal: not past this)
            assert reviewer.post("/v1/leases/acquire", json={"key": "k0"}).status_code == 200
            resp = admin.delete(path + made["token_id"])
            assert resp.status_code == 204 and resp.content == b""
            problem(reviewer.get("/v1/me"), 401, "unauthenticated")
            problem(reviewer.post("/v1/leases/acquire", json={"key": "k"}), 401, "unauthenticated")
        # Only that token: the principal's other token still works.
        with live_server.http(other["token"]) as still:
            assert still.get("/v1/me").status_code == 200
        # Revoking it again: it is gone.
        problem(admin.delete(path + made["token_id"]), 404, "not_found")


def test_principals_revoke_their_own_tokens_but_not_others(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as admin:
        jo = admin.post("/v1/principals", json={"name": "jo"}).json()
        al = admin.post("/v1/principals", json={"name": "al"}).json()
    with live_server.http(jo["token"]) as client:
        body = problem(
            client.delete(f"/v1/principals/al/tokens/{al['token_id']}"), 403, "forbidden"
        )
        assert body["actor"] == "jo"
        assert client.delete(f"/v1/principals/jo/tokens/{jo['token_id']}").status_code == 204
        problem(client.get("/v1/me"), 401, "unauthenticated")
    with live_server.http(al["token"]) as client:
        assert client.get("/v1/me").status_code == 200


def test_revoking_what_is_not_there(live_server: LiveServer) -> None:
    cases = [
        ("/v1/principals/nobody/tokens/0123456789ab", 404, "not_found", None),
        ("/v1/principals/root/tokens/0123456789ab", 404, "not_found", None),
        ("/v1/principals/root/tokens/XYZ", 422, "invalid_request", "token_id"),
        ("/v1/principals/-bad-/tokens/0123456789ab", 422, "invalid_request", "name"),
    ]
    with live_server.http(live_server.admin_token) as admin:
        for path, status, code, field in cases:
            body = problem(admin.delete(path), status, code)
            assert body.get("field") == field, (path, body)
        assert admin.get("/v1/me").status_code == 200  # the admin's token is untouched


IDENTITY_IN_BODY: list[tuple[str, dict[str, Any], str]] = [
    ("/v1/leases/acquire", {"key": "k", "holder": "someone-else"}, "holder"),
    ("/v1/leases/renew", {"key": "k", "token": 1, "holder": "someone-else"}, "holder"),
    ("/v1/leases/extend", {"key": "k", "token": 1, "by_ms": 5000, "holder": "x"}, "holder"),
    ("/v1/leases/release", {"key": "k", "holder": "someone-else"}, "holder"),
    ("/v1/leases/force-release", {"key": "k", "reason": "r", "holder": "x"}, "holder"),
    ("/v1/fenced/write", {"key": "k", "token": 1, "value": 1, "holder": "x"}, "holder"),
    ("/v1/leases/acquire", {"key": "k", "actor": "someone-else"}, "actor"),
    ("/v1/leases/acquire", {"key": "k", "principal": "someone-else"}, "principal"),
]


def test_identity_fields_in_a_body_are_refused(live_server: LiveServer) -> None:
    after = cursor(live_server)
    with live_server.http(live_server.admin_token) as admin:
        for path, body, field in IDENTITY_IN_BODY:
            out = problem(admin.post(path, json=body), 422, "invalid_request")
            assert out["field"] == field, (path, out)
            assert field in out["detail"]
        problem(admin.get("/v1/leases/k"), 404, "not_found")
        assert admin.get("/v1/events", params={"after": after}).json()["events"] == []


def test_the_holder_and_actor_are_the_authenticated_principal(live_server: LiveServer) -> None:
    alice = live_server.token_for("alice")
    with live_server.http(alice) as client:
        lease = client.post("/v1/leases/acquire", json={"key": "jobs/a", "task": "t"}).json()
        assert lease["lease"]["holder"] == "alice"
        token = lease["lease"]["token"]
        assert client.post("/v1/leases/renew", json={"key": "jobs/a", "token": token}).is_success
        assert client.post(
            "/v1/leases/extend", json={"key": "jobs/a", "token": token, "by_ms": 60_000}
        ).is_success
        wrote = client.post("/v1/fenced/write", json={"key": "jobs/a", "token": token, "value": 1})
        assert wrote.is_success
        released = client.post("/v1/leases/release", json={"key": "jobs/a", "token": token})
        assert released.json()["released"] is True
    with live_server.http(live_server.admin_token) as admin:
        events = admin.get("/v1/events", params={"key": "jobs/a"}).json()["events"]
        mine = admin.get("/v1/leases", params={"holder": "alice"}).json()["leases"]
    assert [e["type"] for e in events] == ["acquired", "extended", "written", "released"]
    for event in events:
        assert event["holder"] == "alice", event
        assert event["actor"] == "alice", event
    assert mine == []
