"""``tenure principal ls|show|set-roles|remove`` against a real server, the same routes over
HTTP, and ``--db`` on the database directly. bob's calls and ``--db`` are real ``tenure``
processes; root's and alice's run the CLI's entry function in the test's process
(``procs.cli_inproc``: a subprocess costs about half a second of CPU).

An admin lists everyone, sees a principal's tokens (ids and times, never a secret), changes
roles and removes principals; anyone else sees itself and its agents and gets exit 1 for the
rest; removing a principal force-releases its live leases; every change is an
event. Adding an existing principal with other roles is refused (exit 3) instead of printing a
token that silently ignores them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from procs import Shell, cli, doc, fails, ok

if TYPE_CHECKING:
    from conftest import LiveServer


def test_an_admin_operates_on_principals_from_the_cli(
    live_server: LiveServer, shell: Callable[..., Shell]
) -> None:
    root, bob = shell("root", inproc=True), shell("bob")
    listed = doc(root, "principal", "ls")["principals"]
    assert [p["name"] for p in listed] == ["bob", "root"]
    table = ok(root, "principal", "ls").splitlines()
    assert table[0].split() == ["NAME", "KIND", "ROLES", "PARENT"]
    assert table[2].split() == ["root", "human", "admin", "-"]

    shown = doc(root, "principal", "show", "bob")
    assert shown["principal"] == {"name": "bob", "kind": "human", "roles": [], "parent": None}
    [token] = shown["tokens"]
    assert token["token_id"] == bob.token.split("_")[1] and token["revoked_at"] is None
    secret = bob.token.split("_", 2)[2]  # tnr_<id>_<secret>: the secret may hold a "_" too
    assert bob.token not in json.dumps(shown) and secret not in json.dumps(shown)
    assert "TOKEN" in ok(root, "principal", "show", "bob")

    assert (
        ok(root, "principal", "set-roles", "bob", "supervisor") == "bob now has roles supervisor\n"
    )
    assert doc(bob, "whoami")["roles"] == ["supervisor"]
    assert fails(bob, 1, "principal", "set-roles", "bob", "admin")
    assert doc(root, "principal", "set-roles", "bob")["principal"]["roles"] == []

    assert ok(bob, "lock", "acquire", "jobs/x", "--ttl", "5m")
    removed = doc(root, "principal", "remove", "bob")  # its live lease ends with it
    assert removed == {"principal": shown["principal"], "revoked": [token["token_id"]]}
    assert "revoked" in fails(bob, 1, "whoami")
    assert fails(root, 5, "principal", "show", "bob")

    with live_server.http(live_server.admin_token) as http:
        events = http.get("/v1/events", params={"holder": "bob", "limit": 100}).json()["events"]
    assert [e["type"] for e in events if e["type"].startswith(("principal", "token"))] == [
        "principal_created",
        "token_issued",
        "principal_roles_set",
        "principal_roles_set",
        "token_revoked",
        "principal_removed",
    ]
    assert {e["actor"] for e in events if e["type"] != "principal_created"} >= {"root"}


def test_a_principal_sees_itself_and_its_agents_only(
    live_server: LiveServer, shell: Callable[..., Shell]
) -> None:
    alice, bob = shell("alice", inproc=True), shell("bob")
    shell("alice/helper", kind="agent", parent="alice")
    assert [p["name"] for p in doc(alice, "principal", "ls")["principals"]] == [
        "alice",
        "alice/helper",
    ]
    assert doc(alice, "principal", "show", "alice/helper")["principal"]["parent"] == "alice"
    assert "only admins, the principal itself and its ancestors" in fails(
        bob, 1, "principal", "show", "alice"
    )
    assert fails(bob, 1, "principal", "remove", "alice/helper")
    assert doc(alice, "principal", "remove", "alice/helper")["principal"]["name"] == "alice/helper"


def test_the_routes_over_http(live_server: LiveServer) -> None:
    live_server.token_for("carol")
    with live_server.http(live_server.admin_token) as http:
        assert [p["name"] for p in http.get("/v1/principals").json()["principals"]] == [
            "carol",
            "root",
        ]
        got = http.get("/v1/principals/carol").json()
        assert set(got["tokens"][0]) == {"token_id", "created_at", "expires_at", "revoked_at"}
        patched = http.patch("/v1/principals/carol", json={"roles": ["admin"]})
        assert patched.status_code == 200 and patched.json()["principal"]["roles"] == ["admin"]
        bad = http.patch("/v1/principals/carol", json={"roles": ["king"]})
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"
        gone = http.delete("/v1/principals/carol")
        assert gone.status_code == 200 and len(gone.json()["revoked"]) == 1
        assert http.get("/v1/principals/carol").json()["code"] == "not_found"
        assert http.delete("/v1/principals/carol").status_code == 404


def test_bootstrap_on_the_database_and_add_with_other_roles(store_url: str) -> None:
    cli("principal", "add", "bob", "--db", store_url)
    refused = cli("principal", "add", "bob", "--role", "admin", "--db", store_url, check=False)
    assert refused.returncode == 3 and refused.stdout == ""
    assert "tenure principal set-roles bob admin" in refused.stderr
    done = cli("principal", "set-roles", "bob", "admin", "--db", store_url)
    assert done.stdout == "bob now has roles admin\n"
    assert cli("principal", "add", "bob", "--role", "admin", "--db", store_url).stdout.startswith(
        "tnr_"
    )
    listed = json.loads(cli("principal", "ls", "--db", store_url, "--json").stdout)
    assert listed["principals"][0]["roles"] == ["admin"]
    shown = json.loads(cli("principal", "show", "bob", "--db", store_url, "--json").stdout)
    assert len(shown["tokens"]) == 2
    removed = json.loads(cli("principal", "remove", "bob", "--db", store_url, "--json").stdout)
    assert sorted(removed["revoked"]) == sorted(t["token_id"] for t in shown["tokens"])
    assert json.loads(cli("principal", "ls", "--db", store_url, "--json").stdout) == {
        "principals": []
    }
