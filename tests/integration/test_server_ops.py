"""Health, readiness and the OpenAPI document, over HTTP (SPEC §4, operations)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi.routing import APIRoute

from tenure import PolicySet
from tenure.server import create_app
from tenure.settings import Settings

if TYPE_CHECKING:
    from conftest import LiveServer

# SPEC §4 routes this server implements
SPEC_ROUTES = {
    ("post", "/v1/leases/acquire"),
    ("post", "/v1/leases/renew"),
    ("post", "/v1/leases/renew-all"),
    ("post", "/v1/leases/extend"),
    ("post", "/v1/leases/release"),
    ("post", "/v1/leases/force-release"),
    ("get", "/v1/leases"),
    ("get", "/v1/leases/{key}"),
    ("post", "/v1/fenced/write"),
    ("get", "/v1/fenced/{key}"),
    ("get", "/v1/events"),
    ("post", "/v1/principals"),
    ("get", "/v1/me"),
    ("get", "/healthz"),
    ("get", "/readyz"),
}


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from walk(child)
    elif isinstance(node, list):
        for child in node:
            yield from walk(child)


def test_health_and_readiness_need_no_token(live_server: LiveServer) -> None:
    with live_server.http() as client:
        for path in ("/healthz", "/readyz"):
            resp = client.get(path)
            assert resp.status_code == 200, resp.text
            assert resp.headers["content-type"] == "application/json"
            assert resp.json() == {"status": "ok"}


def test_openapi_lists_every_route(live_server: LiveServer) -> None:
    with live_server.http() as client:
        resp = client.get("/openapi.json")
    assert resp.status_code == 200
    doc = resp.json()
    assert doc["openapi"].startswith("3.1")
    listed = {(method, path) for path, item in doc["paths"].items() for method in item}
    assert listed >= SPEC_ROUTES
    routes = set()
    for route in create_app(Settings(db=live_server.db)).routes:
        if isinstance(route, APIRoute) and route.include_in_schema:
            path = re.sub(r":\w+}", "}", route.path)  # {key:path}, {name:principal}: {key}, {name}
            routes |= {(m.lower(), path) for m in route.methods}
    assert listed == routes
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_openapi_documents_errors_as_problems(live_server: LiveServer) -> None:
    with live_server.http() as client:
        doc = client.get("/openapi.json").json()
    assert set(doc["components"]["schemas"]["Problem"]["required"]) == {
        "type",
        "title",
        "status",
        "code",
        "detail",
    }
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            for status, response in responses.items():
                if status[0] in "45":
                    assert list(response["content"]) == ["application/problem+json"], (path, status)
            if operation.get("security"):
                assert "WWW-Authenticate" in responses["401"]["headers"], (method, path)
            if "requestBody" in operation:
                assert {"400", "413", "422"} <= set(responses), (method, path)
            if path.startswith("/v1/"):  # the database can be down: 503 with Retry-After
                assert "Retry-After" in responses["503"]["headers"], (method, path)
    # Integer bounds are exact integers, never floats such as 9.223372036854776e+18.
    for schema in walk(doc):
        for bound in ("minimum", "maximum"):
            assert not isinstance(schema.get(bound), float), schema
        assert not any(k.startswith("x-tenure") for k in schema), schema


def test_openapi_bounds_come_from_the_policy(live_server: LiveServer) -> None:
    with live_server.http() as client:
        doc = client.get("/openapi.json").json()
    acquire = doc["components"]["schemas"]["AcquireIn"]["properties"]
    ttl = next(s for s in acquire["ttl_ms"]["anyOf"] if s.get("type") == "integer")
    assert (ttl["minimum"], ttl["maximum"]) == (1000, 600_000)
    assert acquire["key"]["maxLength"] == 512

    policy = PolicySet().with_prefix("batch/", max_ttl=3_600_000, max_lease=7_200_000)
    policy = policy.with_prefix("tiny/", min_ttl=500, default_ttl=500, max_key_bytes=2048)
    custom = create_app(Settings(db=live_server.db, policy=policy)).openapi()
    acquire = custom["components"]["schemas"]["AcquireIn"]["properties"]
    ttl = next(s for s in acquire["ttl_ms"]["anyOf"] if s.get("type") == "integer")
    assert (ttl["minimum"], ttl["maximum"]) == (500, 3_600_000)  # the widest over prefixes
    assert acquire["key"]["maxLength"] == 2048
