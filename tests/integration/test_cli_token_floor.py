"""``tenure admin token-floor`` as real processes: through a real server as an admin (anyone
else gets exit 1), the route over HTTP, and ``--db`` on the database directly (bootstrap of a
new database); a lower floor is exit 3 and changes nothing; new tokens are above the floor."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from procs import Shell, cli, doc, fails, ok

if TYPE_CHECKING:
    from conftest import LiveServer


def test_an_admin_raises_the_floor_through_the_server(
    live_server: LiveServer, shell: Callable[..., Shell]
) -> None:
    root, bob = shell("root"), shell("bob")
    assert doc(bob, "lock", "acquire", "jobs/x", "--ttl", "5m")["lease"]["token"] == 1
    assert doc(root, "admin", "token-floor") == {"floor": 0, "max_token": 1}
    assert doc(root, "admin", "token-floor", "--set", "500") == {"floor": 500, "max_token": 1}
    shown = ok(root, "admin", "token-floor").splitlines()
    assert shown[0].split() == ["floor", "500"] and shown[1].split() == ["largest", "token", "1"]
    refused = fails(root, 3, "admin", "token-floor", "--set", "10")
    assert "floors only grow" in refused and "at least 500" in refused
    assert "only admins" in fails(bob, 1, "admin", "token-floor", "--set", "900")
    assert "only admins" in fails(bob, 1, "admin", "token-floor")

    assert (
        doc(bob, "lock", "renew", "jobs/x")["lease"]["token"] == 1
    )  # a live lease keeps its token
    assert ok(bob, "lock", "release", "jobs/x")
    assert doc(bob, "lock", "acquire", "jobs/x")["lease"]["token"] == 501
    assert doc(bob, "lock", "acquire", "jobs/new")["lease"]["token"] == 501

    with live_server.http(live_server.admin_token) as http:
        events = http.get("/v1/events", params={"type": "token_floor_set"}).json()["events"]
    assert [(e["actor"], e["data"]) for e in events] == [("root", {"from": 0, "to": 500})]


def test_the_route_over_http(live_server: LiveServer) -> None:
    carol = live_server.token_for("carol")
    with live_server.http(live_server.admin_token) as http:
        assert http.get("/v1/admin/token-floor").json() == {"floor": 0, "max_token": 0}
        put = http.put("/v1/admin/token-floor", json={"floor": 70})
        assert put.status_code == 200 and put.json() == {"floor": 70, "max_token": 0}
        lower = http.put("/v1/admin/token-floor", json={"floor": 69})
        assert lower.status_code == 409 and lower.json()["code"] == "conflict"
        bad = http.put("/v1/admin/token-floor", json={"floor": -1})
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"
        assert http.get("/v1/admin/token-floor").json()["floor"] == 70
    with live_server.http(carol) as http:
        assert http.put("/v1/admin/token-floor", json={"floor": 80}).status_code == 403
        assert http.get("/v1/admin/token-floor").status_code == 403


def test_bootstrap_on_a_new_database(store_url: str) -> None:
    def floor(*args: str) -> dict[str, int]:
        done = cli("admin", "token-floor", *args, "--db", store_url, "--json")
        result: dict[str, int] = json.loads(done.stdout)
        return result

    assert floor() == {"floor": 0, "max_token": 0}
    assert floor("--set", "48213") == {"floor": 48213, "max_token": 0}
    refused = cli("admin", "token-floor", "--set", "3", "--db", store_url, check=False)
    assert refused.returncode == 3 and "floors only grow" in refused.stderr
    assert floor() == {"floor": 48213, "max_token": 0}
