"""``tenure principal add --ttl`` and ``tenure principal revoke``, as real processes.

A token made with ``--ttl 30d`` expires thirty days from now (``expires_at`` in the JSON); a
bad duration is a usage error that creates nothing. ``tenure principal revoke`` goes through
the server as the caller: a dispatcher revokes its agent's token (the id ``tenure dispatch``
prints), a stranger may not (exit 1).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import tenure
from procs import Shell, cli

if TYPE_CHECKING:
    from conftest import LiveServer

DAY_MS = 86_400_000


def test_principal_add_with_a_ttl(store_url: str) -> None:
    before = int(time.time() * 1000)
    done = cli("principal", "add", "ci", "--kind", "service", "--ttl", "30d", "--db", store_url)
    token = done.stdout.strip()
    assert token.startswith("tnr_")
    doc = json.loads(
        cli("principal", "add", "ci", "--ttl", "12h", "--db", store_url, "--json").stdout
    )
    assert doc["principal"]["name"] == "ci" and doc["token"].startswith("tnr_")
    assert before + 12 * 3_600_000 <= doc["expires_at"] <= time.time() * 1000 + 12 * 3_600_000
    store = tenure.open_store(store_url)
    try:
        found = store.token_by_hash(tenure.service.principals.hash_token(token))
        assert found is not None and found.expires_at is not None
        assert before + 30 * DAY_MS <= found.expires_at <= time.time() * 1000 + 30 * DAY_MS
        forever = cli("principal", "add", "jo", "--db", store_url, "--json").stdout
        assert json.loads(forever)["expires_at"] is None
    finally:
        store.close()


def test_a_bad_ttl_is_a_usage_error_and_creates_nothing(store_url: str) -> None:
    for ttl in ("soon", "0", "-1d"):
        done = cli("principal", "add", "ci", "--ttl", ttl, "--db", store_url, check=False)
        assert done.returncode == 2, (ttl, done.stdout, done.stderr)
        assert "--ttl" in done.stderr and done.stdout == ""
    store = tenure.open_store(store_url)
    try:
        assert store.get_principal("ci") is None
    finally:
        store.close()


def test_a_dispatcher_revokes_its_agents_token_from_the_cli(
    live_server: LiveServer, shell: Callable[..., Shell]
) -> None:
    alice, bob = shell("alice"), shell("bob")
    with live_server.http(live_server.admin_token) as admin:
        assert admin.post("/v1/items", json={"id": "job", "title": "t"}).status_code == 201
    with live_server.http(alice.token) as http:
        sent = http.post("/v1/items/job/dispatch", json={"agent": "a1", "ttl_ms": 60_000})
    agent = sent.json()["agent"]
    token_id = agent["token"].split("_")[1]
    refused = bob("principal", "revoke", agent["name"], token_id)
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    assert "ancestors revoke" in refused.stderr
    doc = alice.json("principal", "revoke", agent["name"], token_id)
    assert doc == {"name": agent["name"], "token_id": token_id}
    with live_server.http(agent["token"]) as bot:
        assert bot.get("/v1/me").status_code == 401
