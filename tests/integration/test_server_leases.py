"""The lease and fenced-register routes of SPEC §4, round trip over HTTP, on each backend."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import pytest

if TYPE_CHECKING:
    from conftest import LiveServer

PROBLEM = "application/problem+json"
LEASE_FIELDS = {
    "key",
    "holder",
    "session",
    "task",
    "token",
    "ttl_ms",
    "acquired_at",
    "renewed_at",
    "expires_at",
    "renewals",
    "meta",
    "state",
    "scope",
    "semaphore",
    "slot",
    "slots",
}


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == PROBLEM
    body: dict[str, Any] = resp.json()
    assert body["code"] == code and body["status"] == status, body
    return body


def ok(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    body: dict[str, Any] = resp.json()
    return body


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def alice(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.token_for("alice")) as client:
        yield client


@pytest.fixture
def bob(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.token_for("bob")) as client:
        yield client


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.http(live_server.admin_token) as client:
        yield client


def events(admin: httpx.Client, key: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(admin.get("/v1/events", params={"key": key}))["events"]
    return found


def test_acquire_returns_the_whole_lease(alice: httpx.Client) -> None:
    before = now_ms()
    body = ok(
        alice.post(
            "/v1/leases/acquire",
            json={"key": "jobs/nightly", "ttl_ms": 20_000, "task": "run-1", "meta": {"a": [1]}},
        )
    )
    assert set(body) == {"lease"}
    lease = body["lease"]
    assert set(lease) == LEASE_FIELDS
    assert lease["key"] == "jobs/nightly" and lease["holder"] == "alice"
    assert lease["task"] == "run-1" and lease["meta"] == {"a": [1]}
    assert lease["token"] >= 1 and lease["renewals"] == 0 and lease["state"] == "live"
    assert lease["ttl_ms"] == 20_000
    assert lease["acquired_at"] == lease["renewed_at"]
    assert lease["expires_at"] == lease["acquired_at"] + 20_000
    assert before - 1000 <= lease["acquired_at"] <= now_ms() + 1000


def test_acquire_defaults_and_reacquire_renews_with_the_same_token(alice: httpx.Client) -> None:
    first = ok(alice.post("/v1/leases/acquire", json={"key": "k"}))["lease"]
    assert first["ttl_ms"] == 30_000 and first["task"] is None and first["meta"] == {}
    again = ok(alice.post("/v1/leases/acquire", json={"key": "k", "task": "t2"}))["lease"]
    assert again["token"] == first["token"]
    assert again["renewals"] == 1 and again["task"] == "t2"
    assert again["expires_at"] >= first["expires_at"]


def test_renew_keeps_the_token_and_moves_the_deadline(alice: httpx.Client) -> None:
    lease = ok(alice.post("/v1/leases/acquire", json={"key": "k", "ttl_ms": 5_000}))["lease"]
    renewed = ok(
        alice.post("/v1/leases/renew", json={"key": "k", "token": lease["token"], "ttl_ms": 9_000})
    )["lease"]
    assert renewed["token"] == lease["token"]
    assert renewed["renewals"] == 1 and renewed["ttl_ms"] == 9_000
    assert renewed["expires_at"] == renewed["renewed_at"] + 9_000
    plain = ok(alice.post("/v1/leases/renew", json={"key": "k", "token": lease["token"]}))
    assert plain["lease"]["renewals"] == 2 and plain["lease"]["ttl_ms"] == 9_000


def test_renew_all(alice: httpx.Client, bob: httpx.Client) -> None:
    for key in ("a/1", "a/2"):
        ok(alice.post("/v1/leases/acquire", json={"key": key}))
    ok(bob.post("/v1/leases/acquire", json={"key": "b/1"}))
    everything = ok(alice.post("/v1/leases/renew-all", json={}))
    assert sorted(lease["key"] for lease in everything["renewed"]) == ["a/1", "a/2"]
    assert all(lease["renewals"] == 1 for lease in everything["renewed"])
    assert everything["lost"] == []
    some = ok(alice.post("/v1/leases/renew-all", json={"keys": ["a/1", "b/1", "never"]}))
    assert [lease["key"] for lease in some["renewed"]] == ["a/1"]
    assert sorted((lost["key"], lost["reason"]) for lost in some["lost"]) == [
        ("b/1", "not_held"),
        ("never", "not_held"),
    ]


def test_extend_by_until_capped_and_never_shorter(
    live_server: LiveServer, alice: httpx.Client
) -> None:
    lease = ok(alice.post("/v1/leases/acquire", json={"key": "k", "ttl_ms": 10_000}))["lease"]
    token = lease["token"]
    by = ok(alice.post("/v1/leases/extend", json={"key": "k", "token": token, "by_ms": 60_000}))
    assert set(by) == {"lease", "extended", "capped", "requested_until", "granted_until"}
    assert by["extended"] is True and by["capped"] is False
    assert by["granted_until"] == by["requested_until"] == by["lease"]["expires_at"]
    assert by["lease"]["expires_at"] >= lease["expires_at"] + 50_000

    until = by["lease"]["expires_at"] + 60_000
    at = ok(alice.post("/v1/leases/extend", json={"key": "k", "token": token, "until": until}))
    assert at["extended"] is True and at["lease"]["expires_at"] == until

    earlier = ok(
        alice.post("/v1/leases/extend", json={"key": "k", "token": token, "until": until - 1})
    )
    assert earlier["extended"] is False and earlier["lease"]["expires_at"] == until

    max_lease = live_server.settings.policy.default.max_lease
    far = now_ms() + 10 * max_lease
    capped = ok(alice.post("/v1/leases/extend", json={"key": "k", "token": token, "until": far}))
    assert capped["capped"] is True and capped["requested_until"] == far
    assert capped["granted_until"] < far
    assert capped["granted_until"] <= now_ms() + max_lease + 1000
    assert capped["lease"]["expires_at"] == capped["granted_until"]

    renewed = ok(alice.post("/v1/leases/renew", json={"key": "k", "token": token}))
    assert renewed["lease"]["expires_at"] == capped["granted_until"]  # renewal keeps the later


def test_extend_wants_exactly_one_of_until_and_by_ms(alice: httpx.Client) -> None:
    token = ok(alice.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]
    for extra in ({}, {"until": now_ms() + 60_000, "by_ms": 1000}, {"until": None}):
        body = problem(
            alice.post("/v1/leases/extend", json={"key": "k", "token": token, **extra}),
            422,
            "invalid_request",
        )
        assert body["field"] in ("until", "by_ms"), body


def test_release_and_release_again(alice: httpx.Client, admin: httpx.Client) -> None:
    token = ok(alice.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]
    done = ok(alice.post("/v1/leases/release", json={"key": "k", "token": token}))
    assert done["released"] is True
    assert done["lease"]["state"] == "released" and done["lease"]["token"] == token
    again = ok(alice.post("/v1/leases/release", json={"key": "k", "token": token}))
    assert again["released"] is False and again["lease"]["state"] == "released"
    never = ok(alice.post("/v1/leases/release", json={"key": "never"}))
    assert never == {"released": False, "lease": None, "reason": "no_lease"}
    assert [e["type"] for e in events(admin, "k")] == ["acquired", "released"]
    # A new acquisition gets a larger token.
    fresh = ok(alice.post("/v1/leases/acquire", json={"key": "k"}))["lease"]
    assert fresh["token"] > token


def test_release_without_a_token_releases_what_you_hold(alice: httpx.Client) -> None:
    ok(alice.post("/v1/leases/acquire", json={"key": "k"}))
    assert ok(alice.post("/v1/leases/release", json={"key": "k"}))["released"] is True


def test_list_leases_with_filters(alice: httpx.Client, bob: httpx.Client) -> None:
    ok(alice.post("/v1/leases/acquire", json={"key": "jobs/a", "task": "x"}))
    ok(alice.post("/v1/leases/acquire", json={"key": "jobs/b", "task": "y"}))
    ok(bob.post("/v1/leases/acquire", json={"key": "other/c", "task": "x"}))
    gone = ok(bob.post("/v1/leases/acquire", json={"key": "jobs/gone"}))["lease"]
    ok(bob.post("/v1/leases/release", json={"key": "jobs/gone", "token": gone["token"]}))

    def keys(**params: Any) -> list[str]:
        leases = ok(alice.get("/v1/leases", params=params))["leases"]
        assert all(lease["state"] == "live" for lease in leases)
        return [lease["key"] for lease in leases]

    assert keys() == ["jobs/a", "jobs/b", "other/c"]
    assert keys(prefix="jobs/") == ["jobs/a", "jobs/b"]
    assert keys(holder="bob") == ["other/c"]
    assert keys(task="x") == ["jobs/a", "other/c"]
    assert keys(prefix="jobs/", holder="alice", task="y") == ["jobs/b"]
    assert keys(limit=1) == ["jobs/a"]
    assert keys(prefix="nothing/") == []


@pytest.mark.parametrize(
    "key",
    ["jobs/nightly-report", "a/b/c/", "/leading", "with space", "ümlaut/日本", "q?x=1#frag", "50%"],
)
def test_get_lease_by_url_encoded_key(alice: httpx.Client, key: str) -> None:
    lease = ok(alice.post("/v1/leases/acquire", json={"key": key}))["lease"]
    got = ok(alice.get(f"/v1/leases/{quote(key, safe='')}"))["lease"]
    assert got == {**lease, "state": "live"}
    if "?" not in key and "#" not in key and "%" not in key and " " not in key:
        # '/' may also travel unencoded
        assert ok(alice.get(f"/v1/leases/{quote(key, safe='/')}"))["lease"]["key"] == key
    ok(alice.post("/v1/leases/release", json={"key": key}))
    assert ok(alice.get(f"/v1/leases/{quote(key, safe='')}"))["lease"]["state"] == "released"


def test_get_lease_of_a_key_never_leased_is_404(alice: httpx.Client) -> None:
    body = problem(alice.get("/v1/leases/never%2Fleased"), 404, "not_found")
    assert body["key"] == "never/leased"


def test_fenced_write_and_read(alice: httpx.Client, bob: httpx.Client) -> None:
    token = ok(alice.post("/v1/leases/acquire", json={"key": "reports/n"}))["lease"]["token"]
    value = {"rows": [1, 2, 3], "ok": True, "name": "ü"}
    wrote = ok(
        alice.post(
            "/v1/fenced/write",
            json={"key": "reports/n", "token": token, "value": value, "op_id": "run-42"},
        )
    )
    assert wrote == {
        "key": "reports/n",
        "token": token,
        "value": value,
        "version": 1,
        "duplicate": False,
    }
    dup = ok(
        alice.post(
            "/v1/fenced/write",
            json={"key": "reports/n", "token": token, "value": value, "op_id": "run-42"},
        )
    )
    assert dup["duplicate"] is True and dup["version"] == 1 and dup["value"] == value
    read = ok(bob.get("/v1/fenced/reports%2Fn"))
    assert set(read) == {"key", "token", "value", "version", "updated_at"}
    assert read["value"] == value and read["version"] == 1 and read["token"] == token
    second = ok(
        alice.post("/v1/fenced/write", json={"key": "reports/n", "token": token, "value": None})
    )
    assert second["version"] == 2
    assert ok(bob.get("/v1/fenced/reports/n"))["value"] is None
    problem(bob.get("/v1/fenced/never"), 404, "not_found")


def test_a_stale_token_cannot_write(alice: httpx.Client, bob: httpx.Client) -> None:
    old = ok(alice.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]
    ok(alice.post("/v1/leases/release", json={"key": "k", "token": old}))
    new = ok(bob.post("/v1/leases/acquire", json={"key": "k"}))["lease"]["token"]
    body = problem(
        alice.post("/v1/fenced/write", json={"key": "k", "token": old, "value": 1}),
        409,
        "stale_token",
    )
    assert body["current_token"] == new and body["token"] == old and body["key"] == "k"
    assert ok(bob.post("/v1/fenced/write", json={"key": "k", "token": new, "value": 2}))


def test_others_live_leases_are_defended(
    alice: httpx.Client, bob: httpx.Client, admin: httpx.Client
) -> None:
    lease = ok(alice.post("/v1/leases/acquire", json={"key": "k", "task": "t-a"}))["lease"]
    token = lease["token"]
    for path, body in [
        ("/v1/leases/renew", {"key": "k", "token": token}),
        ("/v1/leases/extend", {"key": "k", "token": token, "by_ms": 60_000}),
        ("/v1/leases/release", {"key": "k", "token": token}),
        ("/v1/leases/release", {"key": "k"}),
    ]:
        out = problem(bob.post(path, json=body), 403, "not_holder")
        assert out["holder"] == "alice" and out["task"] == "t-a", (path, out)
        assert out["expires_at"] == lease["expires_at"]
        assert "alice" in out["detail"]
    held = problem(bob.post("/v1/leases/acquire", json={"key": "k"}), 409, "lease_held")
    assert held["holder"] == "alice" and held["task"] == "t-a"
    assert held["expires_at"] == lease["expires_at"]
    # Alice's lease is untouched.
    assert ok(admin.get("/v1/leases/k"))["lease"] == lease


def test_force_release(
    live_server: LiveServer, alice: httpx.Client, bob: httpx.Client, admin: httpx.Client
) -> None:
    lease = ok(alice.post("/v1/leases/acquire", json={"key": "k", "task": "t"}))["lease"]
    token = lease["token"]
    ok(alice.post("/v1/fenced/write", json={"key": "k", "token": token, "value": "before"}))

    refused = problem(
        bob.post("/v1/leases/force-release", json={"key": "k", "reason": "mine now"}),
        403,
        "forbidden",
    )
    assert refused["actor"] == "bob"
    missing = problem(
        admin.post("/v1/leases/force-release", json={"key": "k"}), 422, "invalid_request"
    )
    assert missing["field"] == "reason"
    blank = problem(
        admin.post("/v1/leases/force-release", json={"key": "k", "reason": "  "}),
        422,
        "invalid_request",
    )
    assert blank["field"] == "reason"
    assert ok(admin.get("/v1/leases/k"))["lease"]["state"] == "live"

    done = ok(admin.post("/v1/leases/force-release", json={"key": "k", "reason": "stuck"}))
    assert set(done) == {"lease", "actor", "reason"}
    assert done["actor"] == "root" and done["reason"] == "stuck"
    assert done["lease"]["state"] == "force_released" and done["lease"]["holder"] == "alice"
    ended = [e for e in events(admin, "k") if e["type"] == "force_released"]
    assert len(ended) == 1
    assert ended[0]["actor"] == "root" and ended[0]["reason"] == "stuck"
    assert ended[0]["holder"] == "alice" and ended[0]["token"] == token

    stale = problem(
        alice.post("/v1/fenced/write", json={"key": "k", "token": token, "value": "after"}),
        409,
        "stale_token",
    )
    assert stale["current_token"] == token  # nobody acquired since, but the token is dead
    lost = problem(
        alice.post("/v1/leases/renew", json={"key": "k", "token": token}), 409, "lease_lost"
    )
    assert lost["reason"] == "force_released"
    assert ok(bob.get("/v1/fenced/k"))["value"] == "before"
    problem(
        admin.post("/v1/leases/force-release", json={"key": "k", "reason": "again"}),
        404,
        "not_found",
    )


def test_force_release_by_supervisor_and_ancestor(live_server: LiveServer) -> None:
    boss = live_server.token_for("boss", roles=("supervisor",))
    jo = live_server.token_for("jo", kind="human")
    live_server.token_for("jo/agent", parent="jo")
    sub = live_server.token_for("jo/agent/sub", parent="jo/agent")
    with live_server.http(sub) as agent, live_server.http(jo) as parent:
        ok(agent.post("/v1/leases/acquire", json={"key": "k1"}))
        ok(agent.post("/v1/leases/acquire", json={"key": "k2"}))
        by_parent = ok(parent.post("/v1/leases/force-release", json={"key": "k1", "reason": "r"}))
        assert by_parent["actor"] == "jo"
        with live_server.http(boss) as supervisor:
            done = ok(
                supervisor.post("/v1/leases/force-release", json={"key": "k2", "reason": "r"})
            )
        assert done["actor"] == "boss"
        # but a child may not end its parent's lease
        ok(parent.post("/v1/leases/acquire", json={"key": "k3"}))
        problem(
            agent.post("/v1/leases/force-release", json={"key": "k3", "reason": "r"}),
            403,
            "forbidden",
        )


def test_lease_lost_names_how_it_ended(alice: httpx.Client, bob: httpx.Client) -> None:
    first = ok(alice.post("/v1/leases/acquire", json={"key": "k", "ttl_ms": 1000}))["lease"]
    time.sleep(1.1)
    body = problem(
        alice.post("/v1/leases/renew", json={"key": "k", "token": first["token"]}),
        409,
        "lease_lost",
    )
    assert body["reason"] == "expired" and body["token"] == first["token"]
    second = ok(bob.post("/v1/leases/acquire", json={"key": "k"}))["lease"]
    assert second["token"] > first["token"]
    ok(bob.post("/v1/leases/release", json={"key": "k", "token": second["token"]}))
    for token, reason in ((first["token"], "expired"), (second["token"], "released")):
        body = problem(
            bob.post("/v1/leases/extend", json={"key": "k", "token": token, "by_ms": 1000}),
            409,
            "lease_lost",
        )
        assert body["reason"] == reason


def test_events_filters_and_cursor(alice: httpx.Client, admin: httpx.Client) -> None:
    start = ok(admin.get("/v1/events", params={"limit": 1000}))["next"]  # principals made
    token = ok(alice.post("/v1/leases/acquire", json={"key": "e/1"}))["lease"]["token"]
    ok(alice.post("/v1/leases/release", json={"key": "e/1", "token": token}))
    ok(alice.post("/v1/leases/acquire", json={"key": "e/2"}))
    everything = ok(admin.get("/v1/events", params={"after": start}))
    assert [(e["type"], e["key"]) for e in everything["events"]] == [
        ("acquired", "e/1"),
        ("released", "e/1"),
        ("acquired", "e/2"),
    ]
    assert everything["next"] == everything["events"][-1]["id"]
    first = everything["events"][0]
    assert set(first) == {
        "id",
        "at",
        "type",
        "key",
        "holder",
        "task",
        "token",
        "actor",
        "reason",
        "data",
    }
    page = ok(admin.get("/v1/events", params={"after": start, "limit": 1}))
    assert len(page["events"]) == 1
    rest = ok(admin.get("/v1/events", params={"after": page["next"]}))
    assert [e["id"] for e in rest["events"]] == [e["id"] for e in everything["events"][1:]]
    only = ok(admin.get("/v1/events", params={"type": "released"}))["events"]
    assert [e["key"] for e in only] == ["e/1"]
    assert ok(admin.get("/v1/events", params={"holder": "nobody"})) == {
        "events": [],
        "next": everything["events"][-1]["id"],  # past every event examined, though none matched
    }
