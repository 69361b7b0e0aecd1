"""A POST-only path asked with GET is ``405`` with ``Allow``, in the problem form: not a lookup
of a lease or fenced value named after the verb."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LiveServer


@pytest.mark.parametrize(
    "path",
    ["/v1/leases/acquire", "/v1/leases/release", "/v1/leases/renew-all", "/v1/fenced/write"],
)
def test_get_of_a_post_route_is_405_with_allow(live_server: LiveServer, path: str) -> None:
    with live_server.http(live_server.admin_token) as http:
        got = http.get(path)
    assert got.status_code == 405, got.text
    assert got.headers["allow"] == "POST"
    assert got.headers["content-type"] == "application/problem+json"
    body = got.json()
    assert body["code"] == "method_not_allowed"
    assert body["detail"] == "GET is not allowed here; allowed: POST"


def test_a_key_named_like_a_verb_is_still_readable(live_server: LiveServer) -> None:
    with live_server.http(live_server.admin_token) as http:
        assert http.post("/v1/leases/acquire", json={"key": "release"}).status_code == 200
        got = http.get("/v1/leases/release")
        assert got.status_code == 200 and got.json()["lease"]["key"] == "release"
        assert http.get("/v1/leases/never-leased").json()["code"] == "not_found"
