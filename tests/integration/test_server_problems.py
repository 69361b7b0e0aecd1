"""Every problem the lease, fenced and principal routes produce, as received over HTTP.

Each error is ``application/problem+json`` (RFC 9457) with its stable ``code`` and the fields that
explain it (SPEC §4). Invariant 12, "bad input changes nothing": after every refused request the
event log, the live leases, the fenced register and the principals are exactly as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest

import tenure
from tenure.settings import Settings

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
HELD = "held/key"
GONE = "gone/key"
MiB = 1024 * 1024


@dataclass
class World:
    """alice holds HELD (token 2, task t1, a fenced value); her lease on GONE was released."""

    server: LiveServer
    store: tenure.Store
    admin: httpx.Client
    alice: httpx.Client
    bob: httpx.Client
    anonymous: httpx.Client
    lease: dict[str, Any]
    gone: dict[str, Any]

    @property
    def token(self) -> int:
        return int(self.lease["token"])

    def snapshot(self) -> dict[str, Any]:
        return {
            "events": self.admin.get("/v1/events", params={"limit": 1000}).json()["events"],
            "leases": self.admin.get("/v1/leases").json()["leases"],
            "held": self.admin.get("/v1/leases/held%2Fkey").json(),
            "gone": self.admin.get("/v1/leases/gone%2Fkey").json(),
            "fenced": self.admin.get("/v1/fenced/held%2Fkey").json(),
            "principals": sorted(p.name for p in self.store.list_principals()),
        }

    def refused(
        self,
        client: httpx.Client,
        method: str,
        path: str,
        status: int,
        code: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Send a request that must fail with ``status``/``code`` and change nothing."""
        before = self.snapshot()
        if content is not None:
            resp = client.request(method, path, content=content, headers=headers)
        else:
            resp = client.request(method, path, json=json_body, headers=headers)
        body = problem(resp, status, code)
        for name, value in fields.items():
            assert body.get(name) == value, (method, path, name, body)
        assert self.snapshot() == before, (method, path, body)
        return body


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, (resp.request.method, resp.request.url, resp.text)
    assert resp.headers["content-type"] == PROBLEM, resp.headers
    body: dict[str, Any] = resp.json()
    assert body["status"] == status and body["code"] == code, body
    assert body["type"] == f"https://tenure.dev/problems/{code}", body
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


@pytest.fixture
def world(live_server: LiveServer) -> Iterator[World]:
    store = tenure.open_store(live_server.db)
    clients = [
        live_server.http(live_server.admin_token),
        live_server.http(live_server.token_for("alice")),
        live_server.http(live_server.token_for("bob")),
        live_server.http(),
    ]
    admin, alice, bob, anonymous = clients
    try:
        first = alice.post("/v1/leases/acquire", json={"key": HELD}).json()["lease"]
        alice.post("/v1/leases/release", json={"key": HELD, "token": first["token"]})
        lease = alice.post(
            "/v1/leases/acquire", json={"key": HELD, "task": "t1", "ttl_ms": 120_000}
        )
        assert lease.status_code == 200, lease.text
        token = lease.json()["lease"]["token"]
        wrote = alice.post("/v1/fenced/write", json={"key": HELD, "token": token, "value": "v1"})
        assert wrote.status_code == 200
        gone = alice.post("/v1/leases/acquire", json={"key": GONE}).json()["lease"]
        alice.post("/v1/leases/release", json={"key": GONE, "token": gone["token"]})
        yield World(live_server, store, admin, alice, bob, anonymous, lease.json()["lease"], gone)
    finally:
        for client in clients:
            client.close()
        store.close()


def test_unauthenticated_401(world: World) -> None:
    world.refused(
        world.anonymous,
        "POST",
        "/v1/leases/acquire",
        401,
        "unauthenticated",
        json_body={"key": "k"},
    )
    fake = {"Authorization": "Bearer tnr_0123456789ab_" + "A" * 43}
    resp = world.anonymous.post("/v1/leases/release", json={"key": HELD}, headers=fake)
    problem(resp, 401, "unauthenticated")
    assert resp.headers["www-authenticate"].startswith("Bearer")
    world.refused(
        world.anonymous, "POST", "/v1/principals", 401, "unauthenticated", json_body={"name": "x"}
    )


def test_forbidden_403(world: World) -> None:
    world.refused(
        world.bob,
        "POST",
        "/v1/leases/force-release",
        403,
        "forbidden",
        json_body={"key": HELD, "reason": "mine"},
        actor="bob",
        key=HELD,
    )
    world.refused(
        world.bob,
        "POST",
        "/v1/principals",
        403,
        "forbidden",
        json_body={"name": "eve"},
        actor="bob",
    )


def test_not_holder_403(world: World) -> None:
    explain = {
        "holder": "alice",
        "task": "t1",
        "expires_at": world.lease["expires_at"],
        "key": HELD,
    }
    for path, body in [
        ("/v1/leases/renew", {"key": HELD, "token": world.token}),
        ("/v1/leases/extend", {"key": HELD, "token": world.token, "by_ms": 10_000}),
        ("/v1/leases/release", {"key": HELD, "token": world.token}),
        ("/v1/leases/release", {"key": HELD}),
    ]:
        world.refused(world.bob, "POST", path, 403, "not_holder", json_body=body, **explain)


def test_not_found_404(world: World) -> None:
    w = world
    w.refused(w.alice, "GET", "/v1/leases/never%2Fleased", 404, "not_found", key="never/leased")
    w.refused(w.alice, "GET", "/v1/fenced/never", 404, "not_found", key="never")
    w.refused(w.alice, "GET", "/v1/fenced/gone%2Fkey", 404, "not_found")
    w.refused(
        w.alice, "POST", "/v1/leases/renew", 404, "not_found", json_body={"key": "x", "token": 1}
    )
    w.refused(
        w.alice,
        "POST",
        "/v1/leases/extend",
        404,
        "not_found",
        json_body={"key": "x", "token": 1, "by_ms": 1000},
    )
    w.refused(
        w.admin,
        "POST",
        "/v1/leases/force-release",
        404,
        "not_found",
        json_body={"key": GONE, "reason": "r"},
    )
    w.refused(w.alice, "GET", "/v1/no-such-route", 404, "not_found", what="route")
    w.refused(w.admin, "DELETE", "/v1/principals/alice/tokens/0123456789ab", 404, "not_found")
    w.refused(
        w.admin,
        "POST",
        "/v1/principals",
        404,
        "not_found",
        json_body={"name": "kid", "parent": "nobody"},
    )


def test_lease_held_409_names_the_holder_and_records_only_a_conflict(world: World) -> None:
    before = world.snapshot()
    resp = world.bob.post("/v1/leases/acquire", json={"key": HELD, "task": "t2"})
    body = problem(resp, 409, "lease_held")
    assert body["holder"] == "alice" and body["task"] == "t1" and body["key"] == HELD
    assert body["expires_at"] == world.lease["expires_at"]
    after = world.snapshot()
    # The refusal is recorded (SPEC §1 event `conflict`); nothing else changes.
    new = after["events"][len(before["events"]) :]
    assert [(e["type"], e["actor"], e["holder"]) for e in new] == [("conflict", "bob", "alice")]
    assert {**after, "events": before["events"]} == before


def test_lease_lost_409_names_the_reason(world: World) -> None:
    for path, body in [
        ("/v1/leases/renew", {"key": GONE, "token": world.gone["token"]}),
        ("/v1/leases/extend", {"key": GONE, "token": world.gone["token"], "until": 2**40}),
    ]:
        world.refused(
            world.alice,
            "POST",
            path,
            409,
            "lease_lost",
            json_body=body,
            reason="released",
            token=world.gone["token"],
        )


def test_stale_token_409_names_the_current_token(world: World) -> None:
    for token in (world.token + 1, world.token - 1):
        world.refused(
            world.alice,
            "POST",
            "/v1/fenced/write",
            409,
            "stale_token",
            json_body={"key": HELD, "token": token, "value": "v2"},
            token=token,
            current_token=world.token,
            key=HELD,
        )
    never = world.refused(
        world.alice,
        "POST",
        "/v1/fenced/write",
        409,
        "stale_token",
        json_body={"key": "never", "token": 1, "value": 1},
    )
    assert never["current_token"] is None


INVALID: list[tuple[str, str, Any, str]] = [
    # (method, path, JSON body or query, field)
    ("POST", "/v1/leases/acquire", {"key": HELD, "ttl_ms": 999}, "ttl_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "ttl_ms": 600_001}, "ttl_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "ttl_ms": 0}, "ttl_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "ttl_ms": "30000"}, "ttl_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "ttl_ms": 1500.5}, "ttl_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "ttl_ms": True}, "ttl_ms"),
    ("POST", "/v1/leases/acquire", {"key": ""}, "key"),
    ("POST", "/v1/leases/acquire", {"key": "a\x00b"}, "key"),
    ("POST", "/v1/leases/acquire", {"key": "a\nb"}, "key"),
    ("POST", "/v1/leases/acquire", {"key": 5}, "key"),
    ("POST", "/v1/leases/acquire", {"key": ["a"]}, "key"),
    ("POST", "/v1/leases/acquire", {}, "key"),
    ("POST", "/v1/leases/acquire", {"key": "new", "task": "   "}, "task"),
    ("POST", "/v1/leases/acquire", {"key": "new", "task": "x" * 1025}, "task"),
    ("POST", "/v1/leases/acquire", {"key": "new", "task": "a\x07"}, "task"),
    ("POST", "/v1/leases/acquire", {"key": "new", "meta": [1]}, "meta"),
    ("POST", "/v1/leases/acquire", {"key": "new", "wait_ms": -1}, "wait_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "wait_ms": 300_001}, "wait_ms"),
    ("POST", "/v1/leases/acquire", {"key": "new", "Key": "x"}, "Key"),
    ("POST", "/v1/leases/renew", {"key": HELD}, "token"),
    ("POST", "/v1/leases/renew", {"key": HELD, "token": 0}, "token"),
    ("POST", "/v1/leases/renew", {"key": HELD, "token": 2**63}, "token"),
    ("POST", "/v1/leases/renew", {"key": HELD, "token": "1"}, "token"),
    ("POST", "/v1/leases/renew", {"key": HELD, "token": 1, "ttl_ms": 10}, "ttl_ms"),
    ("POST", "/v1/leases/renew-all", {"keys": "held/key"}, "keys"),
    ("POST", "/v1/leases/renew-all", {"keys": [""]}, "key"),
    ("POST", "/v1/leases/extend", {"key": HELD, "token": 1}, "until"),
    ("POST", "/v1/leases/extend", {"key": HELD, "token": 1, "until": 1, "by_ms": 1}, "until"),
    ("POST", "/v1/leases/extend", {"key": HELD, "token": 1, "until": -1}, "until"),
    ("POST", "/v1/leases/extend", {"key": HELD, "token": 1, "by_ms": 0}, "by_ms"),
    ("POST", "/v1/leases/release", {"key": HELD, "token": -1}, "token"),
    ("POST", "/v1/leases/force-release", {"key": HELD}, "reason"),
    ("POST", "/v1/leases/force-release", {"key": HELD, "reason": ""}, "reason"),
    ("POST", "/v1/fenced/write", {"key": HELD, "token": 1}, "value"),
    ("POST", "/v1/fenced/write", {"key": HELD, "token": 1, "value": 1, "op_id": " "}, "op_id"),
    ("GET", "/v1/leases", {"limit": 0}, "limit"),
    ("GET", "/v1/leases", {"limit": "many"}, "limit"),
    ("GET", "/v1/leases", {"prefix": "a\x01"}, "prefix"),
    ("GET", "/v1/leases/a%01b", None, "key"),
    ("GET", "/v1/events", {"after": -1}, "after"),
    ("GET", "/v1/events", {"limit": 1001}, "limit"),
    ("GET", "/v1/events", {"key": ""}, "key"),
    ("GET", "/v1/events", {"holder": " "}, "holder"),
]


def test_invalid_request_422_names_the_field(world: World) -> None:
    for method, path, data, field in INVALID:
        client = world.admin
        if method == "GET":
            before = world.snapshot()
            resp = client.get(path, params=data)
            body = problem(resp, 422, "invalid_request")
            assert world.snapshot() == before
        else:
            body = world.refused(client, method, path, 422, "invalid_request", json_body=data)
        assert body["field"] == field, (method, path, data, body)
        assert field.split(".")[0] in body["detail"], body


MALFORMED = [b'{"key": ', b"{'key': 'k'}", b"[]", b'["key"]', b'"key"', b"1", b"null", b"", b"\xff"]


def test_malformed_or_non_object_bodies_are_400(world: World) -> None:
    for content in MALFORMED:
        for path in ("/v1/leases/acquire", "/v1/fenced/write", "/v1/principals"):
            world.refused(
                world.admin,
                "POST",
                path,
                400,
                "invalid_request",
                content=content,
                headers={"content-type": "application/json"},
                field="body",
            )


def test_a_body_without_a_content_type_is_read_as_json(world: World) -> None:
    resp = world.bob.post("/v1/leases/acquire", content=json.dumps({"key": "curl"}).encode())
    assert resp.status_code == 200, resp.text
    assert resp.json()["lease"]["holder"] == "bob"


def test_too_large_413_for_oversized_keys_meta_and_values(world: World) -> None:
    w = world
    for key in ("k" * 513, "é" * 257):  # 513 and 514 bytes; 257 characters are not the point
        size = len(key.encode())
        limits = {"field": "key", "limit": 512, "size": size}
        w.refused(
            w.alice,
            "POST",
            "/v1/leases/acquire",
            413,
            "too_large",
            json_body={"key": key},
            **limits,
        )
        w.refused(w.alice, "GET", f"/v1/leases/{key}", 413, "too_large", **limits)
        w.refused(w.alice, "GET", f"/v1/fenced/{key}", 413, "too_large", **limits)
        w.refused(
            w.alice,
            "POST",
            "/v1/leases/renew-all",
            413,
            "too_large",
            json_body={"keys": [HELD, key]},
            **limits,
        )
    w.refused(
        w.alice,
        "POST",
        "/v1/leases/acquire",
        413,
        "too_large",
        json_body={"key": "new", "meta": {"blob": "x" * 5000}},
        field="meta",
        limit=4096,
    )
    w.refused(
        w.alice,
        "POST",
        "/v1/fenced/write",
        413,
        "too_large",
        json_body={"key": HELD, "token": w.token, "value": "x" * MiB},
        field="value",
        limit=MiB,
    )
    big = b'{"key": "new", "meta": {"x": "' + b"x" * (2 * MiB) + b'"}}'
    w.refused(
        w.alice,
        "POST",
        "/v1/leases/acquire",
        413,
        "too_large",
        content=big,
        field="body",
        limit=2 * MiB,
        size=len(big),
    )


def test_too_large_413_for_a_body_over_max_body_bytes(live_server: LiveServer) -> None:
    """A server with a small ``max_body_bytes``; with and without ``Content-Length``."""
    settings = Settings(db=live_server.db, max_body_bytes=1000)
    small = type(live_server)(live_server.db, settings).start()
    try:
        with small.http(small.admin_token) as admin:
            fits = {"key": "k", "meta": {"x": "y" * 900}}
            assert admin.post("/v1/leases/acquire", json=fits).status_code == 200
            body = json.dumps({"key": "k2", "meta": {"x": "y" * 1000}}).encode()
            resp = admin.post("/v1/leases/acquire", content=body)
            out = problem(resp, 413, "too_large")
            assert out["field"] == "body" and out["limit"] == 1000 and out["size"] == len(body)

            def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
                yield b'{"key": "k3", "meta": {"x": "'
                for _ in range(20):
                    yield b"y" * 100
                yield b'"}}'

            resp = admin.post("/v1/leases/acquire", content=chunks())
            assert "content-length" not in resp.request.headers
            out = problem(resp, 413, "too_large")
            assert out["field"] == "body" and out["limit"] == 1000 and out["size"] > 1000
            events = admin.get("/v1/events").json()["events"]
            leases = [(e["type"], e["key"]) for e in events if e["key"] is not None]
            assert leases == [("acquired", "k")]  # (the others: principals and tokens made)
    finally:
        small.stop()


NOT_ALLOWED: list[tuple[str, str, set[str]]] = [
    ("PUT", "/v1/leases/acquire", {"POST"}),
    ("DELETE", "/v1/me", {"GET"}),
    ("POST", "/v1/leases/some/key", {"GET"}),
    ("PATCH", "/v1/principals", {"GET", "POST"}),
    ("GET", "/v1/principals/jo/tokens/0123456789ab", {"DELETE"}),
    ("POST", "/healthz", {"GET"}),
    ("OPTIONS", "/v1/leases", {"GET"}),
]


def test_method_not_allowed_405_with_allow(world: World) -> None:
    for method, path, allowed in NOT_ALLOWED:
        before = world.snapshot()
        resp = world.admin.request(method, path, json={"key": "k"})
        body = problem(resp, 405, "method_not_allowed")
        advertised = {m.strip() for m in resp.headers["allow"].split(",")}
        assert advertised - {"HEAD"} == allowed, (method, path, resp.headers["allow"])
        assert method in body["detail"]
        assert world.snapshot() == before
