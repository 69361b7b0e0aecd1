"""Invariant 4: fenced writes use the epoch (the key's latest token), not the clock."""

from __future__ import annotations

import pytest

import tenure
from tenure import NotFound, Service, StaleToken

ADMIN = tenure.Principal("root", roles=("admin",))


def test_a_write_with_the_current_token_is_accepted_and_versioned(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "reports/a", ttl_ms=5_000, task="run-1")
    first = service.write("alice", "reports/a", lease.token, {"rows": 1})
    assert first == tenure.FencedWrite("reports/a", 1, {"rows": 1}, 1, duplicate=False)
    clock.advance(1_000)
    second = service.write("alice", "reports/a", lease.token, [1, "two", None])
    assert (second.version, second.duplicate) == (2, False)
    assert service.read("reports/a") == tenure.FencedValue(
        "reports/a", 1, [1, "two", None], 2, clock.now_ms()
    )
    written = service.events(type="written")
    assert [(e.key, e.token, e.actor, e.holder, e.task, e.data) for e in written] == [
        ("reports/a", 1, "alice", "alice", "run-1", {"version": 1}),
        ("reports/a", 1, "alice", "alice", "run-1", {"version": 2}),
    ]


@pytest.mark.parametrize(
    "value",
    [None, 0, -1.5, "", "ünïcødé 🚀", [], {}, {"a": {"b": [1, {"c": None}]}}, True],
    ids=repr,
)
def test_any_json_value_round_trips(service: Service, value: object) -> None:
    lease = service.acquire("alice", "v")
    service.write("alice", "v", lease.token, value)
    got = service.read("v").value
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("value", [1e300, 2.5e-300, 0.1, -1.0, 2**70], ids=repr)
def test_json_numbers_keep_their_value_and_type(
    service: Service, backend: str, request: pytest.FixtureRequest, value: object
) -> None:
    lease = service.acquire("alice", "v")
    service.write("alice", "v", lease.token, {"n": value})
    got = service.read("v").value["n"]
    assert got == value and type(got) is type(value)


def test_a_release_keeps_the_fence_open_until_the_next_acquisition(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "reports/a", ttl_ms=60_000)
    service.release("alice", "reports/a", lease.token)
    assert service.write("alice", "reports/a", lease.token, "late but current").version == 1
    service.acquire("bob", "reports/a")
    with pytest.raises(StaleToken):
        service.write("alice", "reports/a", lease.token, "too late")


def test_a_current_token_is_accepted_after_the_lease_lapsed_if_nobody_reacquired(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "reports/a", ttl_ms=1_000)
    clock.advance(10_000)
    assert service.get("reports/a").state == "expired"
    assert service.write("alice", "reports/a", lease.token, "late").version == 1
    service.reap()  # recording the expiry does not change the epoch either
    assert service.write("alice", "reports/a", lease.token, "later").version == 2
    assert service.read("reports/a").value == "later"


def test_a_stale_token_is_rejected_with_the_current_token(
    service: Service, clock: tenure.FakeClock
) -> None:
    old = service.acquire("alice", "reports/a", ttl_ms=1_000)
    service.write("alice", "reports/a", old.token, "v1")
    clock.advance(1_000)
    new = service.acquire("bob", "reports/a", ttl_ms=1_000)
    before = service.events()
    with pytest.raises(StaleToken) as caught:
        service.write("alice", "reports/a", old.token, "stale")
    err = caught.value
    assert (err.key, err.token, err.current_token) == ("reports/a", 1, 2)
    assert (err.code, err.status) == ("stale_token", 409)
    assert service.read("reports/a").value == "v1"
    assert service.events() == before
    # A token from the future is stale too.
    with pytest.raises(StaleToken) as future:
        service.write("bob", "reports/a", new.token + 1, "future")
    assert future.value.current_token == 2
    assert service.write("bob", "reports/a", new.token, "v2").version == 2


def test_a_stale_token_is_rejected_even_while_the_clock_calls_it_valid(
    service: Service, clock: tenure.FakeClock
) -> None:
    old = service.acquire("alice", "reports/a", ttl_ms=60_000)
    service.release("alice", "reports/a")
    service.acquire("bob", "reports/a", ttl_ms=60_000)
    assert clock.now_ms() < old.expires_at  # alice's old deadline has not passed
    with pytest.raises(StaleToken) as caught:
        service.write("alice", "reports/a", old.token, "stale")
    assert caught.value.current_token == 2
    with pytest.raises(NotFound):
        service.read("reports/a")


def test_a_write_to_a_key_never_leased_is_stale(service: Service) -> None:
    with pytest.raises(StaleToken) as caught:
        service.write("alice", "nobody/leased", 1, "x")
    assert caught.value.current_token is None
    with pytest.raises(NotFound) as missing:
        service.read("nobody/leased")
    assert missing.value.what == "fenced value"


def test_repeating_an_op_id_returns_the_first_result_and_changes_nothing(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "reports/a", ttl_ms=1_000)
    first = service.write("alice", "reports/a", lease.token, {"n": 1}, op_id="run-42")
    assert first == tenure.FencedWrite("reports/a", 1, {"n": 1}, 1, duplicate=False)
    events = service.events()
    register = service.read("reports/a")
    clock.advance(500)
    again = service.write("alice", "reports/a", lease.token, {"n": 1}, op_id="run-42")
    assert again == tenure.FencedWrite("reports/a", 1, {"n": 1}, 1, duplicate=True)
    assert service.read("reports/a") == register
    assert service.events() == events
    # Still the first result once the token went stale: the retry of an acknowledged write.
    clock.advance(1_000)
    service.acquire("bob", "reports/a", ttl_ms=1_000)
    late = service.write("alice", "reports/a", lease.token, {"n": 1}, op_id="run-42")
    assert late == again
    assert service.read("reports/a") == register
    # A different op_id is a different write, and op_ids are scoped to their key.
    assert service.write("bob", "reports/a", 2, "b", op_id="run-43").version == 2
    other = service.acquire("alice", "reports/b")
    assert service.write("alice", "reports/b", other.token, "x", op_id="run-42").version == 1


def test_an_op_id_under_a_newer_token_is_a_new_write(service: Service) -> None:
    # A date-style op_id, as a nightly job names its run: tomorrow's holder must not be
    # answered with today's write.
    a = service.acquire("alice", "reports/nightly")
    service.write("alice", "reports/nightly", a.token, {"rows": 1}, op_id="nightly-2026-06-01")
    service.release("alice", "reports/nightly", a.token)
    b = service.acquire("bob", "reports/nightly")
    written = service.write(
        "bob", "reports/nightly", b.token, {"rows": 42}, op_id="nightly-2026-06-01"
    )
    assert (written.token, written.version, written.duplicate) == (b.token, 2, False)
    assert service.read("reports/nightly").value == {"rows": 42}
    # and each one's retry still answers its own first write
    assert service.write(
        "alice", "reports/nightly", a.token, {"rows": 1}, op_id="nightly-2026-06-01"
    ) == tenure.FencedWrite("reports/nightly", a.token, {"rows": 1}, 1, duplicate=True)
    assert service.read("reports/nightly").value == {"rows": 42}


def test_an_op_id_with_another_value_is_an_idempotency_conflict(service: Service) -> None:
    lease = service.acquire("alice", "reports/a")
    service.write("alice", "reports/a", lease.token, {"rows": 1}, op_id="run-1")
    events, register = service.events(), service.read("reports/a")
    with pytest.raises(tenure.IdempotencyConflict) as caught:
        service.write("alice", "reports/a", lease.token, {"rows": 2}, op_id="run-1")
    assert caught.value.info() == {
        "key": "reports/a",
        "op_id": "run-1",
        "token": lease.token,
        "version": 1,
    }
    assert (service.events(), service.read("reports/a")) == (events, register)


@pytest.mark.parametrize("who", ["bob", ADMIN, tenure.Principal("sup", roles=("supervisor",))])
def test_only_the_holder_writes_with_the_current_token(
    service: Service, clock: tenure.FakeClock, who: str | tenure.Principal
) -> None:
    lease = service.acquire("alice", "reports/a", ttl_ms=1_000)
    service.write("alice", "reports/a", lease.token, "mine", op_id="op-1")
    events, register = service.events(), service.read("reports/a")
    for attempt in (None, "op-1", "op-2"):
        with pytest.raises(tenure.NotHolder) as caught:
            service.write(who, "reports/a", lease.token, "mine", op_id=attempt)
        assert (caught.value.holder, caught.value.key) == ("alice", "reports/a")
    clock.advance(5_000)  # lapsed, but nobody acquired since: still alice's token
    with pytest.raises(tenure.NotHolder):
        service.write(who, "reports/a", lease.token, "late")
    assert (service.events()[len(events) :], service.read("reports/a")) == (
        [e for e in service.events()[len(events) :] if e.type == "expired"],
        register,
    )
    assert service.write("alice", "reports/a", lease.token, "late").version == 2


def test_an_older_token_is_stale_whoever_sends_it(service: Service) -> None:
    old = service.acquire("alice", "reports/a")
    service.release("alice", "reports/a", old.token)
    service.acquire("bob", "reports/a")
    for who in ("alice", "bob", ADMIN):
        with pytest.raises(StaleToken):
            service.write(who, "reports/a", old.token, "late")


def test_any_session_of_the_holder_writes(service: Service) -> None:
    lease = service.acquire("alice", "reports/a", session="replica-1")
    # the token is the proof: a sibling session of the same principal may write with it
    assert service.write("alice", "reports/a", lease.token, "v").version == 1


def test_a_rejected_write_does_not_consume_its_op_id(service: Service) -> None:
    service.acquire("alice", "reports/a")
    with pytest.raises(StaleToken):
        service.write("alice", "reports/a", 7, "stale", op_id="op-1")
    assert service.write("alice", "reports/a", 1, "ok", op_id="op-1").duplicate is False
    assert service.read("reports/a").value == "ok"


def test_force_release_kills_the_old_token_at_once(
    service: Service, clock: tenure.FakeClock
) -> None:
    lease = service.acquire("alice", "reports/a", ttl_ms=60_000)
    service.write("alice", "reports/a", lease.token, "v1")
    service.force_release(ADMIN, "reports/a", reason="runaway")
    with pytest.raises(StaleToken) as caught:
        service.write("alice", "reports/a", lease.token, "after")
    assert (caught.value.token, caught.value.current_token) == (1, 1)
    assert service.read("reports/a").value == "v1"
    clock.advance(120_000)  # it stays dead after the old deadline too
    with pytest.raises(StaleToken):
        service.write("alice", "reports/a", lease.token, "after")
    new = service.acquire("bob", "reports/a")
    assert service.write("bob", "reports/a", new.token, "v2").version == 2
