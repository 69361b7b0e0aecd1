"""``tenure stats`` and ``tenure events --item``: the CLI as a subprocess against a real server."""

from __future__ import annotations

import re
from collections.abc import Callable

import tenure
from procs import Shell, doc, fails, ok, wait_for


def test_stats_in_table_and_json_form(shell: Callable[..., Shell]) -> None:
    jo, root = shell("jo"), shell("root", roles=("admin",))
    jos = tenure.Client(jo.url, token=jo.token)
    for i in range(2):
        lease = jos.acquire(f"jobs/r{i}")
        jos.release(f"jobs/r{i}", lease.token)
    jos.acquire("jobs/lapses", ttl_ms=1_000)
    jos.acquire("jobs/stuck")
    ok(root, "lock", "force-release", "jobs/stuck", "--reason", "wedged")
    wait_for(lambda: jos.stats()["endings"]["expired"] == 1, timeout=5, what="the expiry")

    stats = doc(jo, "stats")
    assert stats["endings"] == {
        "released": 2,
        "expired": 1,
        "force_released": 1,
        "taken_over": 0,
        "completed": 0,
    }
    assert stats["windows"]["1h"]["expired_share"] == 0.25
    assert stats["expiring_holders"] == [
        {"holder": "jo", "expired": 1, "ended": 4, "expired_share": 0.25}
    ]

    shown = ok(jo, "stats")
    assert re.search(r"expired share\s+25\.0%\s+25\.0%\s+25\.0%", shown), shown
    assert re.search(r"force_released\s+1\s+1\s+1", shown), shown
    assert re.search(r"jo\s+1\s+4\s+25\.0%", shown), shown

    nobody = Shell(jo.url, "tnr_000000000000_" + "x" * 43, jo.home.parent / "nobody")
    assert "token" in fails(nobody, 1, "stats")


def test_events_of_one_item(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    ok(jo, "items", "add", "Fix the login", "--id", "login")
    ok(jo, "claim", "login")
    tenure.Client(jo.url, token=jo.token).acquire("jobs/other")
    found = doc(jo, "events", "--item", "login")["events"]
    assert [(e["type"], e["key"]) for e in found] == [
        ("item_created", "items/login"),
        ("acquired", "items/login"),
        ("claimed", "items/login"),
    ]
    assert doc(jo, "events", "--item", "login", "--key", "jobs/other")["events"] == []
