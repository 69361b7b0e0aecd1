"""Subtree leases from the fronts: ``tenure lock acquire KEY/ --subtree`` (a subprocess against
a real server) and the client's ``scope=`` (blocking, asyncio and a held lease), on each
backend."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tenure
from procs import Shell, doc, fails, ok


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo", kind="human")


@pytest.fixture
def bo(live_server: Any) -> Iterator[tenure.Client]:
    token = live_server.token_for("bo")
    with tenure.Client(live_server.url, token=token, session="bo-1") as client:
        yield client


def test_the_cli_takes_a_subtree_and_every_edit_under_it_is_refused(
    jo: Shell, bo: tenure.Client
) -> None:
    key = "files/github.com/acme/shop/src/billing/"
    shown = ok(jo, "lock", "acquire", key, "--subtree", "--ttl", "10m", "--task", "refactor")
    assert "subtree" in shown and "refactor" in shown
    with pytest.raises(tenure.LeaseHeld) as caught:
        bo.acquire(key + "invoice.py")
    assert (caught.value.held_key, caught.value.holder) == (key, "jo")
    assert (caught.value.task, caught.value.scope) == ("refactor", "subtree")
    said = fails(jo, 2, "lock", "acquire", "files/github.com/acme/shop/README", "--subtree")
    assert "scope" in said and "ending in '/'" in said
    listed = doc(jo, "lock", "ls", "--prefix", "files/")["leases"]
    assert [(x["key"], x["scope"]) for x in listed] == [(key, "subtree")]
    assert doc(jo, "lock", "release", key)["released"] is True
    assert bo.acquire(key + "invoice.py").holder == "bo"
    # the CLI names the blocking lease in its refusal (exit 3: conflict)
    stderr = fails(jo, 3, "lock", "acquire", key, "--subtree")
    assert f"held through key {key}invoice.py by bo" in stderr, stderr


def test_the_client_sends_scope(live_server: Any, bo: tenure.Client) -> None:
    lease = bo.acquire("repo/", ttl_ms=30_000, scope="subtree")
    assert lease.scope == "subtree" and bo.get_lease("repo/").scope == "subtree"
    assert bo.acquire("repo/x").scope == "key"  # your own session: no conflict
    other = live_server.token_for("cy")
    with tenure.Client(live_server.url, token=other) as cy:
        with pytest.raises(tenure.LeaseHeld) as caught:
            cy.acquire("repo/y")
        assert caught.value.held_key == "repo/" and caught.value.session == "bo-1"
        with pytest.raises(tenure.InvalidRequest):
            cy.acquire("repo", scope="subtree")
    bo.release("repo/x")
    bo.release("repo/")
    with bo.lease("repo/", ttl=30, scope="subtree") as held:
        assert held.lease.scope == "subtree"
        with tenure.Client(live_server.url, token=other) as cy, pytest.raises(tenure.LeaseHeld):
            cy.acquire("repo/z")

    async def run() -> tenure.Lease:
        async with tenure.AsyncClient(live_server.url, token=other) as cy:
            return await cy.acquire("tree/", scope="subtree")

    assert asyncio.run(run()).scope == "subtree"
