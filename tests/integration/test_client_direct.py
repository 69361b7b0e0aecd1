"""Direct mode: the client API on the database itself (SQLite and PostgreSQL URLs), no server."""

from __future__ import annotations

import asyncio
import time

import pytest

import tenure
from tenure.service.principals import Principals

TTL = 1.0


@pytest.fixture
def principals(store_url: str) -> None:
    store = tenure.open_store(store_url)
    try:
        people = Principals(store)
        people.bootstrap("root", "human", ("admin",))
        people.bootstrap("cron", "service")
    finally:
        store.close()


@pytest.mark.usefixtures("principals")
def test_direct_mode_runs_every_verb(store_url: str) -> None:
    with (
        tenure.Client(store_url, principal="cron") as cron,
        tenure.Client(store_url, principal="root") as root,
    ):
        assert cron.direct and "token" not in repr(cron)
        assert cron.me() == tenure.Principal("cron", "service", (), None)
        assert root.me().roles == ("admin",)
        lease = cron.acquire("jobs/nightly", ttl_ms=5000, task="cron:nightly", meta={"n": 1})
        assert lease.holder == "cron" and lease.meta == {"n": 1}
        assert cron.renew("jobs/nightly", lease.token).renewals == 1
        assert cron.extend("jobs/nightly", lease.token, by_ms=60_000).extended
        assert [x.key for x in cron.renew_all().renewed] == ["jobs/nightly"]
        assert root.get_lease("jobs/nightly").holder == "cron"
        assert [x.key for x in root.list_leases(holder="cron")] == ["jobs/nightly"]
        write = cron.fenced_write("jobs/nightly", lease.token, {"rows": 3}, op_id="run-42")
        assert cron.fenced_write("jobs/nightly", lease.token, {"rows": 3}, op_id="run-42").duplicate
        with pytest.raises(tenure.IdempotencyConflict) as reused:
            cron.fenced_write("jobs/nightly", lease.token, {}, op_id="run-42")
        assert (reused.value.op_id, reused.value.version) == ("run-42", write.version)
        assert root.fenced_read("jobs/nightly").version == write.version

        with pytest.raises(tenure.LeaseHeld) as held:
            root.acquire("jobs/nightly")
        assert (held.value.holder, held.value.task) == ("cron", "cron:nightly")
        with pytest.raises(tenure.NotHolder) as not_holder:
            root.renew("jobs/nightly", lease.token)
        assert not_holder.value.holder == "cron"
        with pytest.raises(tenure.StaleToken) as stale:
            cron.fenced_write("jobs/nightly", lease.token + 1, 1)
        assert stale.value.current_token == lease.token
        with pytest.raises(tenure.InvalidRequest) as invalid:
            cron.acquire("jobs/x", ttl_ms=5)
        assert invalid.value.field == "ttl_ms"
        with pytest.raises(tenure.InvalidRequest) as invalid:
            cron.acquire("jobs/x", wait_ms=-1)
        assert invalid.value.field == "wait_ms"
        with pytest.raises(tenure.TooLarge):
            cron.acquire("jobs/x", meta={"x": "y" * 5000})
        with pytest.raises(tenure.Forbidden):
            cron.force_release("jobs/nightly", "no right")
        with pytest.raises(tenure.Forbidden):
            cron.add_principal("mallory")

        forced = root.force_release("jobs/nightly", "maintenance")
        assert forced.actor == "root" and forced.lease.token == lease.token
        with pytest.raises(tenure.LeaseLost) as lost:
            cron.renew("jobs/nightly", lease.token)
        assert lost.value.reason == "force_released"
        assert not cron.release("jobs/nightly", lease.token).released
        events = root.events(key="jobs/nightly")
        assert events[0].type == "acquired" and events[-1].type == "force_released"
        assert root.events(key="jobs/nightly", type="acquired", limit=1) == events[:1]
        with pytest.raises(TypeError, match="kye"):
            root.events(kye="jobs/nightly")  # type: ignore[call-overload]

        issued = root.add_principal("helper", parent="cron")
        assert issued.principal.parent == "cron" and issued.token.startswith("tnr_")
        root.revoke_token("helper", issued.token_id)
        with pytest.raises(tenure.NotFound):
            root.revoke_token("helper", issued.token_id)

    # a name the database does not know acts as a plain principal: the name is trusted
    with tenure.Client(store_url, principal="stranger") as stranger:
        assert stranger.me() == tenure.Principal("stranger")
        assert stranger.acquire("jobs/mine", ttl_ms=5000).holder == "stranger"


@pytest.mark.usefixtures("principals")
def test_direct_mode_lease_heartbeat_and_waiting(store_url: str) -> None:
    with (
        tenure.Client(store_url, principal="cron") as cron,
        tenure.Client(store_url, principal="root") as root,
    ):
        root.acquire("jobs/wait", ttl_ms=1000)
        start = time.monotonic()
        with cron.lease("jobs/wait", ttl=TTL, wait=5.0) as lease:
            assert 0.5 <= time.monotonic() - start <= 3.0  # polled until root's lease lapsed
            time.sleep(1.5 * TTL)
            lease.check()
            assert root.get_lease("jobs/wait").state == "live"
            root.force_release("jobs/wait", "test")
            assert lease.wait_lost(TTL)
            assert lease.lost_reason == "force_released"
            with pytest.raises(tenure.LeaseLost):
                lease.check()


@pytest.mark.usefixtures("principals")
def test_async_direct_mode(store_url: str) -> None:
    async def main() -> None:
        async with (
            tenure.AsyncClient(store_url, principal="cron") as cron,
            tenure.AsyncClient(store_url, principal="root") as root,
        ):
            assert (await cron.me()).name == "cron"
            lease = await cron.acquire("a/k", ttl_ms=5000)
            assert (await cron.renew("a/k", lease.token)).renewals == 1
            with pytest.raises(tenure.LeaseHeld):
                await root.acquire("a/k")
            assert (await cron.release("a/k", lease.token)).released
            assert [e.type for e in await cron.events(key="a/k", wait_ms=10)][-1] == "released"
            with pytest.raises(TypeError, match="kye"):
                cron.events(kye="a/k")  # type: ignore[call-arg]
            async with cron.lease("a/held", ttl=TTL) as held:
                await asyncio.sleep(1.2 * TTL)
                held.check()
                assert (await root.get_lease("a/held")).renewals >= 2
            with pytest.raises(tenure.LeaseLost) as raised:
                async with cron.lease("a/lost", ttl=TTL):
                    await root.force_release("a/lost", "test")
                    await asyncio.sleep(5 * TTL)
            assert raised.value.reason == "force_released"

    asyncio.run(main())


def test_direct_mode_needs_a_principal(store_url: str) -> None:
    with pytest.raises(ValueError, match="principal"):
        tenure.Client(store_url)
    with pytest.raises(ValueError, match="token"):
        tenure.AsyncClient(store_url, token="tnr_x", principal="cron")


@pytest.mark.usefixtures("principals")
def test_direct_mode_clients_are_sessions_of_their_own(store_url: str) -> None:
    with (
        tenure.Client(store_url, principal="cron") as one,
        tenure.Client(store_url, principal="cron") as two,
    ):
        assert one.session != two.session
        lease = one.acquire("jobs/s", ttl_ms=5000)
        assert lease.session == one.session
        with pytest.raises(tenure.LeaseHeld) as held:
            two.acquire("jobs/s")
        assert (held.value.holder, held.value.session) == ("cron", one.session)
        assert one.acquire("jobs/s", ttl_ms=5000).token == lease.token  # its own: renewed
        with pytest.raises(tenure.NotHolder):
            two.release("jobs/s")
        assert two.renew_all().renewed == ()
        assert [x.key for x in one.renew_all().renewed] == ["jobs/s"]

        one.items.create("t", id="it1")
        claim = one.items.claim("it1")
        with pytest.raises(tenure.LeaseHeld):
            two.items.claim("it1")
        assert not two.items.release("it1", epoch=claim.lease.token + 1).released
        assert two.items.release("it1", epoch=claim.lease.token).released  # the epoch says which
        one.items.create("t2", id="it2")
        sent = one.items.dispatch("it2", agent="a1", session="agent:x")
        assert sent.lease.session == "agent:x"
