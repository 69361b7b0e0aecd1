"""A release that ends nothing says why: the reply's ``reason`` (on the hot path, through ASGI
with the access log on, and in the Python client's result)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import tenure
from conftest import LiveServer


@pytest.fixture(params=[False, True], ids=["hot-path", "asgi"])
def server(request: pytest.FixtureRequest, store_url: str) -> Iterator[LiveServer]:
    live = LiveServer(store_url, access_log=request.param).start()
    try:
        yield live
    finally:
        live.stop()


def post(http: httpx.Client, path: str, **body: object) -> dict[str, object]:
    reply = http.post(path, json=body)
    assert reply.status_code == 200, reply.text
    doc: dict[str, object] = reply.json()
    return doc


def test_a_stale_token_releases_nothing_and_names_the_current_one(server: LiveServer) -> None:
    with server.http(server.token_for("jo")) as jo:
        first = post(jo, "/v1/leases/acquire", key="jobs/nightly", ttl_ms=30_000)["lease"]
        assert isinstance(first, dict)
        post(jo, "/v1/leases/release", key="jobs/nightly", token=first["token"])
        second = post(jo, "/v1/leases/acquire", key="jobs/nightly", ttl_ms=30_000)["lease"]
        assert isinstance(second, dict)
        stale = post(jo, "/v1/leases/release", key="jobs/nightly", token=first["token"])
        assert stale["released"] is False
        assert stale["reason"] == "stale_token"
        lease = stale["lease"]
        assert isinstance(lease, dict)
        assert (lease["token"], lease["state"]) == (second["token"], "live")
        done = post(jo, "/v1/leases/release", key="jobs/nightly", token=second["token"])
        assert (done["released"], done["reason"]) == (True, None)


def test_an_ended_lease_and_a_key_never_leased_say_so(server: LiveServer) -> None:
    with server.http(server.token_for("jo")) as jo:
        lease = post(jo, "/v1/leases/acquire", key="k", ttl_ms=30_000)["lease"]
        assert isinstance(lease, dict)
        post(jo, "/v1/leases/release", key="k", token=lease["token"])
        again = post(jo, "/v1/leases/release", key="k", token=lease["token"])
        assert (again["released"], again["reason"]) == (False, "ended")
        never = post(jo, "/v1/leases/release", key="never/leased", token=1)
        assert (never["released"], never["reason"], never["lease"]) == (False, "no_lease", None)


def test_the_python_client_carries_the_reason(server: LiveServer) -> None:
    client = tenure.Client(server.url, token=server.token_for("jo"))
    try:
        lease = client.acquire("k", ttl_ms=30_000)
        client.release("k", lease.token)
        newer = client.acquire("k", ttl_ms=30_000)
        result = client.release("k", lease.token)
        assert (result.released, result.reason) == (False, "stale_token")
        assert result.lease is not None and result.lease.token == newer.token
    finally:
        client.close()
