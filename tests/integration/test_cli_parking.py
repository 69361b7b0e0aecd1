"""Attempts and parking through the ``tenure`` command against a real server whose policy
parks ``items/`` after two failed attempts: ``queue``, ``brief`` and ``items show`` say why an
item is parked, claiming it exits 3 naming ``tenure items reopen``, which puts it back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tenure
from conftest import LiveServer
from procs import Shell, doc, fails, ok
from tenure.core.policy import PolicySet
from tenure.settings import Settings

WHY = "parked after 2 attempts: command_exited (status 1), command_exited (status 3)"


@pytest.fixture
def parking_server(store_url: str) -> Iterator[LiveServer]:
    server = LiveServer(store_url)
    policy = PolicySet().with_prefix("items/", max_attempts=2)
    server.settings = Settings(db=store_url, port=server.port, policy=policy)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def user(parking_server: LiveServer, tmp_path: Path) -> Callable[[str], Shell]:
    def make(name: str) -> Shell:
        token = parking_server.token_for(name, "human")
        return Shell(parking_server.url, token, tmp_path / name)

    return make


def test_a_parked_item_is_shown_refused_and_reopened(user: Callable[[str], Shell]) -> None:
    jo, bob = user("jo"), user("bob")
    ok(jo, "items", "add", "Fix the flaky test", "--id", "flaky")
    with tenure.Client(jo.url, token=jo.token) as client:
        for status in (1, 3):  # what `tenure dispatch` sends when its command fails
            epoch = client.items.claim("flaky").lease.token
            client.items.release("flaky", epoch, reason="command_exited", exit_status=status)
    assert WHY in ok(jo, "queue")
    assert WHY in ok(jo, "items", "show", "flaky")
    brief = ok(jo, "brief")
    assert "parked: reopen with `tenure items reopen ITEM --reason ...`" in brief and WHY in brief
    assert [x["item"]["id"] for x in doc(jo, "brief")["parked"]] == ["flaky"]
    assert "tenure items reopen flaky" in fails(bob, 3, "claim", "flaky")
    assert "flaky" not in ok(bob, "ready")
    fails(bob, 1, "items", "reopen", "flaky", "--reason", "not mine")  # forbidden
    out = doc(jo, "items", "reopen", "flaky", "--reason", "fixed the test")
    assert (out["item"]["status"], out["item"]["attempts"], out["item"]["failures"]) == (
        "open",
        0,
        [],
    )
    fails(jo, 3, "items", "reopen", "flaky", "--reason", "again")  # not parked any more
    assert doc(bob, "claim", "flaky")["item"]["attempts"] == 1
