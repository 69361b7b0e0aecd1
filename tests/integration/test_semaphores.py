"""Semaphores over HTTP and the CLI: ``slots`` on acquire (the hot path hands it to the routes),
a waiter woken by a freed slot, ``tenure lock acquire --slots`` and ``tenure run --slots``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import tenure
from procs import Shell, doc, fails, ok, remembered


def test_slots_over_http_and_a_waiter_gets_a_freed_slot(shell: Callable[..., Shell]) -> None:
    users = [shell(name) for name in ("ann", "bob", "cy")]
    clients = [tenure.Client(u.url, token=u.token) for u in users]
    try:
        a = clients[0].acquire("gpu", ttl_ms=60_000, slots=2)
        b = clients[1].acquire("gpu", ttl_ms=60_000, slots=2)
        assert {a.key, b.key} == {"gpu#slot/0", "gpu#slot/1"} and b.token > a.token
        with pytest.raises(tenure.LeaseHeld) as caught:
            clients[2].acquire("gpu", slots=2)
        assert sorted(caught.value.holders or []) == ["ann", "bob"]
        assert caught.value.slots == 2
        with pytest.raises(tenure.errors.SlotsMismatch) as wrong:
            clients[2].acquire("gpu", slots=3)
        assert wrong.value.slots == 2

        got: list[tenure.Lease] = []
        waiter = threading.Thread(
            target=lambda: got.append(clients[2].acquire("gpu", slots=2, wait_ms=20_000))
        )
        started = time.monotonic()
        waiter.start()
        time.sleep(0.3)  # let the waiter reach the server (the result does not depend on it)
        clients[1].release(b.key, b.token)
        waiter.join(25)
        assert got and got[0].key == b.key and got[0].token > b.token
        assert time.monotonic() - started < 15  # woken by the release, not by a deadline
    finally:
        for c in clients:
            c.close()


def test_lock_acquire_and_run_with_slots(shell: Callable[..., Shell]) -> None:
    jo, bo = shell("jo"), shell("bo")
    lease = doc(jo, "lock", "acquire", "pool", "--slots", "1", "--ttl", "1m")["lease"]
    assert lease["key"] == "pool#slot/0"
    assert remembered(jo)["pool#slot/0"] == lease["token"]
    said = fails(bo, 3, "lock", "acquire", "pool", "--slots", "1")
    assert "pool all 1 slots held, by jo; the first frees until" in said, said
    said = fails(bo, 2, "lock", "acquire", "pool", "--slots", "2")
    assert "'pool' is a semaphore of 1 slots while it is held" in said, said

    doc(jo, "lock", "release", "pool#slot/0")
    cmd = ("sh", "-c", "echo $TENURE_LEASE_KEY $TENURE_LEASE_TOKEN >&2")
    ran = bo.json("run", "pool", "--slots", "1", "--", *cmd)
    assert ran["key"] == "pool#slot/0" and ran["token"] > lease["token"]


def test_lock_ls_and_show_name_the_semaphore_and_the_slot(shell: Callable[..., Shell]) -> None:
    jo, bo = shell("jo"), shell("bo")
    doc(jo, "lock", "acquire", "gpu", "--slots", "3", "--ttl", "1m", "--task", "train")
    doc(bo, "lock", "acquire", "gpu", "--slots", "3", "--ttl", "1m")
    doc(jo, "lock", "acquire", "deploy", "--ttl", "1m")
    listed = doc(jo, "lock", "ls")["leases"]
    assert [(x["key"], x["semaphore"], x["slot"], x["slots"]) for x in listed] == [
        ("deploy", None, None, None),
        ("gpu#slot/0", "gpu", 0, 3),
        ("gpu#slot/1", "gpu", 1, 3),
    ]
    rows = [line.split() for line in ok(jo, "lock", "ls").splitlines()[1:]]
    assert [r[:6] for r in rows[1:]] == [
        ["gpu", "slot", "0", "of", "3", "jo"],
        ["gpu", "slot", "1", "of", "3", "bo"],
    ]
    assert rows[0][:3] == ["deploy", "key", "jo"]
    shown = ok(bo, "lock", "show", "gpu#slot/1")
    assert "gpu, slot 1 of 3" in shown, shown
    with tenure.Client(jo.url, token=jo.token) as client:  # GET /v1/leases, parsed
        (lease,) = client.list_leases(prefix="gpu#slot/1")
        assert (lease.semaphore, lease.slot, lease.slots) == ("gpu", 1, 3)
