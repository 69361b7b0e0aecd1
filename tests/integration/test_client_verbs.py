"""Every client verb against a real server on each backend, blocking and asyncio."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tenure
from tenure.client import IssuedToken

WEIRD_KEYS = ["jobs/a b/ü?x=1#frag%20", ".", "..", "a//b/", "100%"]


@pytest.fixture
def admin(live_server: Any) -> Any:
    with tenure.Client(live_server.url, token=live_server.admin_token) as client:
        yield client


@pytest.fixture
def worker(live_server: Any) -> Any:
    token = live_server.token_for("worker", kind="agent")
    with tenure.Client(live_server.url, token=token) as client:
        yield client


def test_every_verb_round_trips(admin: tenure.Client, worker: tenure.Client) -> None:
    assert admin.me() == tenure.Principal("root", "human", ("admin",), None)
    assert worker.me().name == "worker"

    lease = worker.acquire("jobs/nightly", ttl_ms=5000, task="run-1", meta={"n": 1})
    assert (lease.key, lease.holder, lease.task, lease.meta) == (
        "jobs/nightly",
        "worker",
        "run-1",
        {"n": 1},
    )
    assert (lease.ttl_ms, lease.state, lease.renewals) == (5000, "live", 0)
    again = worker.acquire("jobs/nightly", ttl_ms=5000)  # your own live lease: same token
    assert again.token == lease.token and again.renewals == 1

    renewed = worker.renew("jobs/nightly", lease.token, ttl_ms=6000)
    assert renewed.token == lease.token and renewed.ttl_ms == 6000
    assert renewed.expires_at >= lease.expires_at

    ext = worker.extend("jobs/nightly", lease.token, by_ms=60_000)
    assert ext.extended and not ext.capped and ext.lease.expires_at == ext.granted_until
    same = worker.extend("jobs/nightly", lease.token, until=ext.granted_until - 1)
    assert not same.extended and same.lease.expires_at == ext.granted_until
    capped = worker.extend("jobs/nightly", lease.token, by_ms=10**12)
    assert capped.capped and capped.granted_until < capped.requested_until

    worker.acquire("jobs/other", ttl_ms=5000)
    both = worker.renew_all()
    assert {x.key for x in both.renewed} == {"jobs/nightly", "jobs/other"} and both.lost == ()
    some = worker.renew_all(["jobs/other", "jobs/never"])
    assert [x.key for x in some.renewed] == ["jobs/other"]
    assert some.lost == (tenure.LostLease("jobs/never", "not_held", None),)

    got = admin.get_lease("jobs/nightly")
    assert got.holder == "worker" and got.token == lease.token and got.state == "live"
    assert [x.key for x in admin.list_leases(prefix="jobs/")] == ["jobs/nightly", "jobs/other"]
    assert [x.key for x in admin.list_leases(holder="worker", task="run-1")] == ["jobs/nightly"]
    assert admin.list_leases(holder="nobody") == []

    first = worker.fenced_write("jobs/nightly", lease.token, {"rows": [1, 2]}, op_id="op-1")
    assert (first.version, first.duplicate, first.value) == (1, False, {"rows": [1, 2]})
    repeat = worker.fenced_write("jobs/nightly", lease.token, {"rows": [1, 2]}, op_id="op-1")
    assert repeat.duplicate and repeat.version == 1 and repeat.value == {"rows": [1, 2]}
    with pytest.raises(tenure.IdempotencyConflict) as reused:  # one op_id, one intended write
        worker.fenced_write("jobs/nightly", lease.token, {"rows": "other"}, op_id="op-1")
    assert (reused.value.op_id, reused.value.token, reused.value.version) == (
        "op-1", lease.token, 1,
    )  # fmt: skip
    write = worker.fenced_write("jobs/nightly", lease.token, "done")
    value = admin.fenced_read("jobs/nightly")
    assert (value.value, value.token, value.version) == ("done", lease.token, 2)
    assert write.version == 2

    released = worker.release("jobs/nightly", lease.token)
    assert released.released and released.lease is not None
    assert released.lease.state == "released"
    assert not worker.release("jobs/nightly", lease.token).released  # idempotent
    assert worker.release("jobs/other").released  # without a token: this session's own

    forced_lease = worker.acquire("jobs/stuck", ttl_ms=5000)
    forced = admin.force_release("jobs/stuck", "stuck for an hour")
    assert (forced.actor, forced.reason) == ("root", "stuck for an hour")
    assert forced.lease.token == forced_lease.token and forced.lease.state == "force_released"

    events = admin.events()
    types = [e.type for e in events]
    assert {"acquired", "extended", "released", "force_released", "written"} <= set(types)
    assert [e.id for e in events] == sorted(e.id for e in events)
    mine = admin.events(key="jobs/stuck")
    assert [e.type for e in mine] == ["acquired", "force_released"]
    assert mine[1].actor == "root" and mine[1].reason == "stuck for an hour"
    later = admin.events(after=events[2].id, limit=2)
    assert [e.id for e in later] == [events[3].id, events[4].id]
    assert [e.type for e in admin.events(type="force_released", holder="worker")] == [
        "force_released"
    ]

    issued = admin.add_principal("jo/reviewer-1", kind="agent", parent="worker")
    assert isinstance(issued, IssuedToken) and issued.token.startswith("tnr_")
    assert issued.principal == tenure.Principal("jo/reviewer-1", "agent", (), "worker")
    admin.revoke_token("jo/reviewer-1", issued.token_id)  # a name with a slash, in the path
    with pytest.raises(tenure.NotFound):
        admin.revoke_token("jo/reviewer-1", issued.token_id)
    sup = admin.add_principal("sup", kind="human", roles=("supervisor",))
    with tenure.Client(admin.url, token=sup.token) as client:
        assert client.me().roles == ("supervisor",)
        client.revoke_token("sup", sup.token_id)
        with pytest.raises(tenure.Unauthenticated):
            client.me()


def test_keys_of_any_shape_survive_the_path(admin: tenure.Client) -> None:
    for key in WEIRD_KEYS:
        lease = admin.acquire(key, ttl_ms=5000)
        assert admin.get_lease(key).key == key
        admin.fenced_write(key, lease.token, key)
        assert admin.fenced_read(key).value == key


def test_errors_raise_their_class_with_fields(
    live_server: Any, admin: tenure.Client, worker: tenure.Client
) -> None:
    lease = worker.acquire("k", ttl_ms=5000, task="run-9")

    with pytest.raises(tenure.LeaseHeld) as held:
        admin.acquire("k")
    assert (held.value.holder, held.value.task) == ("worker", "run-9")
    assert held.value.expires_at == lease.expires_at and held.value.key == "k"

    with pytest.raises(tenure.NotHolder) as not_holder:
        admin.renew("k", lease.token)
    assert not_holder.value.holder == "worker"
    with pytest.raises(tenure.NotHolder):
        admin.release("k")

    with pytest.raises(tenure.StaleToken) as stale:
        worker.renew("k", lease.token + 5)
    assert stale.value.current_token == lease.token

    worker.release("k", lease.token)
    with pytest.raises(tenure.LeaseLost) as lost:
        worker.renew("k", lease.token)
    assert lost.value.reason == "released" and lost.value.token == lease.token

    newer = admin.acquire("k", ttl_ms=5000)
    with pytest.raises(tenure.StaleToken) as stale:
        worker.fenced_write("k", lease.token, 1)
    assert stale.value.current_token == newer.token and stale.value.token == lease.token

    with pytest.raises(tenure.InvalidRequest) as invalid:
        worker.acquire("k2", ttl_ms=10)
    assert invalid.value.field == "ttl_ms"
    with pytest.raises(tenure.InvalidRequest) as invalid:
        worker.extend("k", newer.token)
    assert invalid.value.field == "until"
    with pytest.raises(tenure.InvalidRequest) as invalid:
        worker.fenced_write("k", newer.token, float("inf"))  # refused before it is sent
    assert invalid.value.field == "value"

    with pytest.raises(tenure.TooLarge) as big:
        worker.acquire("k3", meta={"blob": "x" * 5000})
    assert (big.value.field, big.value.limit) == ("meta", 4096)
    assert big.value.size is not None and big.value.size > 4096

    with pytest.raises(tenure.NotFound) as missing:
        worker.get_lease("never/acquired")
    assert missing.value.what == "lease"
    with pytest.raises(tenure.NotFound):
        worker.fenced_read("never/written")

    with pytest.raises(tenure.Forbidden) as forbidden:
        worker.add_principal("mallory")
    assert forbidden.value.actor == "worker"
    with pytest.raises(tenure.Forbidden):
        worker.force_release("k", "because")

    bad = "tnr_000000000000_" + "A" * 43
    for token in (bad, "garbage", None):
        with (
            tenure.Client(live_server.url, token=token) as client,
            pytest.raises(tenure.Unauthenticated),
        ):
            client.me()


def test_async_client_round_trips_and_raises_alike(live_server: Any) -> None:
    token = live_server.token_for("async-worker")

    async def main() -> None:
        async with (
            tenure.AsyncClient(live_server.url, token=token) as client,
            tenure.AsyncClient(live_server.url, token=live_server.admin_token) as admin,
        ):
            assert (await client.me()).name == "async-worker"
            lease = await client.acquire("a/k", ttl_ms=5000, task="t", meta={"m": 1})
            assert (await client.renew("a/k", lease.token)).renewals == 1
            assert (await client.extend("a/k", lease.token, by_ms=20_000)).extended
            assert len((await client.renew_all()).renewed) == 1
            assert (await admin.get_lease("a/k")).holder == "async-worker"
            assert [x.key for x in await admin.list_leases(prefix="a/")] == ["a/k"]
            write = await client.fenced_write("a/k", lease.token, [1], op_id="x")
            assert (await admin.fenced_read("a/k")).version == write.version
            with pytest.raises(tenure.LeaseHeld) as held:
                await admin.acquire("a/k")
            assert held.value.holder == "async-worker" and held.value.task == "t"
            with pytest.raises(tenure.NotHolder):
                await admin.renew("a/k", lease.token)
            with pytest.raises(tenure.StaleToken):
                await client.fenced_write("a/k", lease.token + 1, 1)
            assert (await client.release("a/k", lease.token)).released
            with pytest.raises(tenure.LeaseLost) as lost:
                await client.renew("a/k", lease.token)
            assert lost.value.reason == "released"
            again = await client.acquire("a/k", ttl_ms=5000)
            forced = await admin.force_release("a/k", "test")
            assert forced.lease.token == again.token
            assert [e.type for e in await admin.events(key="a/k")][-1] == "force_released"
            issued = await admin.add_principal("async-2")
            await admin.revoke_token("async-2", issued.token_id)
            with pytest.raises(tenure.Forbidden):
                await client.add_principal("nope")
            with pytest.raises(tenure.InvalidRequest):
                await client.acquire("a/x", ttl_ms=1)

    asyncio.run(main())
