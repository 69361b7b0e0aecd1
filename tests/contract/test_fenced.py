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
    again = service.write("alice", "reports/a", lease.token, {"n": 2}, op_id="run-42")
    assert again == tenure.FencedWrite("reports/a", 1, {"n": 1}, 1, duplicate=True)
    assert service.read("reports/a") == register
    assert service.events() == events
    # Still the first result once the token went stale: the retry of an acknowledged write.
    clock.advance(1_000)
    service.acquire("bob", "reports/a", ttl_ms=1_000)
    late = service.write("alice", "reports/a", lease.token, {"n": 3}, op_id="run-42")
    assert late == again
    assert service.read("reports/a") == register
    # A different op_id is a different write, and op_ids are scoped to their key.
    assert service.write("bob", "reports/a", 2, "b", op_id="run-43").version == 2
    other = service.acquire("alice", "reports/b")
    assert service.write("alice", "reports/b", other.token, "x", op_id="run-42").version == 1


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
