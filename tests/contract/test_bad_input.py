"""Invariant 12: bad input is refused naming the field, and changes nothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tenure
from tenure import InvalidRequest, Service, TooLarge

KEY = "jobs/held"
BIG = "x" * (1024 * 1024)


@pytest.fixture
def seeded(service: Service, clock: tenure.FakeClock) -> Service:
    """alice holds KEY (token 2, a fenced value written); bob was refused once."""
    service.acquire("alice", KEY, ttl_ms=10_000)
    service.release("alice", KEY)
    service.acquire("alice", KEY, ttl_ms=10_000, task="run", meta={"m": 1})
    service.write("alice", KEY, 2, {"v": 1}, op_id="op")
    with pytest.raises(tenure.LeaseHeld):
        service.acquire("bob", KEY)
    clock.advance(1_000)
    return service


def snapshot(service: Service) -> tuple[Any, ...]:
    return (
        service.events(limit=1000),
        service.get(KEY),
        service.list(),
        service.read(KEY),
        service.contention(KEY),
        service.store.next_deadline(),
    )


Call = Callable[[Service], object]

BAD_KEYS: list[Any] = [
    "",
    None,
    5,
    b"jobs/a",
    ["jobs/a"],
    "jobs/\n",
    "jobs/\x00a",
    "jobs/\x7f",
    "jobs/\ta",
    "jobs/\x9fa",  # C1 control
    "jobs/\ud800",  # lone surrogate
]

CASES: list[tuple[str, Call, str]] = [
    *[(f"acquire key={k!r}", lambda s, k=k: s.acquire("bob", k), "key") for k in BAD_KEYS],
    ("acquire key too long", lambda s: s.acquire("bob", "k" * 513), "key"),
    ("acquire ttl_ms='5'", lambda s: s.acquire("alice", KEY, ttl_ms="5"), "ttl_ms"),
    ("acquire ttl_ms=True", lambda s: s.acquire("alice", KEY, ttl_ms=True), "ttl_ms"),
    ("acquire ttl_ms=5000.0", lambda s: s.acquire("alice", KEY, ttl_ms=5000.0), "ttl_ms"),
    ("acquire ttl_ms=-1", lambda s: s.acquire("alice", KEY, ttl_ms=-1), "ttl_ms"),
    ("acquire ttl_ms=0", lambda s: s.acquire("alice", KEY, ttl_ms=0), "ttl_ms"),
    ("acquire ttl_ms=999", lambda s: s.acquire("alice", KEY, ttl_ms=999), "ttl_ms"),
    ("acquire ttl_ms too long", lambda s: s.acquire("alice", KEY, ttl_ms=600_001), "ttl_ms"),
    ("acquire ttl_ms=2**64", lambda s: s.acquire("alice", KEY, ttl_ms=2**64), "ttl_ms"),
    ("acquire task=''", lambda s: s.acquire("alice", KEY, task=""), "task"),
    ("acquire task=5", lambda s: s.acquire("alice", KEY, task=5), "task"),
    ("acquire task ctrl", lambda s: s.acquire("alice", KEY, task="a\x00b"), "task"),
    ("acquire task long", lambda s: s.acquire("alice", KEY, task="t" * 1025), "task"),
    ("acquire meta=list", lambda s: s.acquire("alice", KEY, meta=[1]), "meta"),
    ("acquire meta='{}'", lambda s: s.acquire("alice", KEY, meta="{}"), "meta"),
    ("acquire meta int keys", lambda s: s.acquire("alice", KEY, meta={1: 2}), "meta"),
    ("acquire meta NaN", lambda s: s.acquire("alice", KEY, meta={"x": math.nan}), "meta"),
    ("acquire meta set", lambda s: s.acquire("alice", KEY, meta={"x": {1}}), "meta"),
    ("acquire meta big", lambda s: s.acquire("alice", KEY, meta={"x": "y" * 5000}), "meta"),
    ("acquire who=''", lambda s: s.acquire("", "jobs/new"), "principal"),
    ("acquire who=None", lambda s: s.acquire(None, "jobs/new"), "principal"),
    ("renew token=True", lambda s: s.renew("alice", KEY, True), "token"),
    ("renew token='2'", lambda s: s.renew("alice", KEY, "2"), "token"),
    ("renew token=2.0", lambda s: s.renew("alice", KEY, 2.0), "token"),
    ("renew token=0", lambda s: s.renew("alice", KEY, 0), "token"),
    ("renew token=-2", lambda s: s.renew("alice", KEY, -2), "token"),
    ("renew token=2**63", lambda s: s.renew("alice", KEY, 2**63), "token"),
    ("renew token=None", lambda s: s.renew("alice", KEY, None), "token"),
    ("renew ttl_ms=0", lambda s: s.renew("alice", KEY, 2, ttl_ms=0), "ttl_ms"),
    ("renew ttl_ms='1'", lambda s: s.renew("alice", KEY, 2, ttl_ms="1000"), "ttl_ms"),
    ("renew key", lambda s: s.renew("alice", "", 2), "key"),
    ("extend by_ms=-5", lambda s: s.extend("alice", KEY, 2, by_ms=-5), "by_ms"),
    ("extend by_ms=0", lambda s: s.extend("alice", KEY, 2, by_ms=0), "by_ms"),
    ("extend by_ms='5'", lambda s: s.extend("alice", KEY, 2, by_ms="5000"), "by_ms"),
    ("extend by_ms=True", lambda s: s.extend("alice", KEY, 2, by_ms=True), "by_ms"),
    ("extend until=-1", lambda s: s.extend("alice", KEY, 2, until=-1), "until"),
    ("extend until='x'", lambda s: s.extend("alice", KEY, 2, until="x"), "until"),
    ("extend until=float", lambda s: s.extend("alice", KEY, 2, until=1.8e12), "until"),
    ("extend until=2**63", lambda s: s.extend("alice", KEY, 2, until=2**63), "until"),
    ("extend token=True", lambda s: s.extend("alice", KEY, True, by_ms=5000), "token"),
    ("release token=True", lambda s: s.release("alice", KEY, True), "token"),
    ("release token=0", lambda s: s.release("alice", KEY, 0), "token"),
    ("release token='2'", lambda s: s.release("alice", KEY, "2"), "token"),
    ("release key ctrl", lambda s: s.release("alice", "jobs/\x1bheld"), "key"),
    ("force reason=''", lambda s: s.force_release(ADMIN, KEY, ""), "reason"),
    ("force reason=None", lambda s: s.force_release(ADMIN, KEY, None), "reason"),
    ("force key", lambda s: s.force_release(ADMIN, 42, "r"), "key"),
    ("write token=True", lambda s: s.write("alice", KEY, True, "v"), "token"),
    ("write token='2'", lambda s: s.write("alice", KEY, "2", "v"), "token"),
    ("write value big", lambda s: s.write("alice", KEY, 2, BIG), "value"),
    ("write value NaN", lambda s: s.write("alice", KEY, 2, math.inf), "value"),
    ("write value object", lambda s: s.write("alice", KEY, 2, object()), "value"),
    ("write value bytes", lambda s: s.write("alice", KEY, 2, b"v"), "value"),
    ("write op_id=''", lambda s: s.write("alice", KEY, 2, "v", op_id=""), "op_id"),
    ("write op_id=5", lambda s: s.write("alice", KEY, 2, "v", op_id=5), "op_id"),
    ("write op_id long", lambda s: s.write("alice", KEY, 2, "v", op_id="o" * 257), "op_id"),
    ("write key", lambda s: s.write("alice", "k" * 600, 2, "v"), "key"),
    ("renew_all keys=str", lambda s: s.renew_all("alice", KEY), "keys"),
    ("renew_all keys=int", lambda s: s.renew_all("alice", 5), "keys"),
    ("renew_all bad key", lambda s: s.renew_all("alice", [KEY, ""]), "key"),
    ("events after=-1", lambda s: s.events(after=-1), "after"),
    ("events after='0'", lambda s: s.events(after="0"), "after"),
    ("events limit=0", lambda s: s.events(limit=0), "limit"),
    ("events limit=1001", lambda s: s.events(limit=1001), "limit"),
    ("events limit=True", lambda s: s.events(limit=True), "limit"),
    ("events key", lambda s: s.events(key=""), "key"),
    ("events type", lambda s: s.events(type=5), "type"),
    ("list limit=0", lambda s: s.list(limit=0), "limit"),
    ("list prefix=5", lambda s: s.list(prefix=5), "prefix"),
    ("list holder ctrl", lambda s: s.list(holder="a\x00"), "holder"),
    ("get key", lambda s: s.get(""), "key"),
    ("read key", lambda s: s.read(None), "key"),
    ("contention key", lambda s: s.contention("a\nb"), "key"),
    ("reap limit=0", lambda s: s.reap(0), "limit"),
]

ADMIN = tenure.Principal("root", roles=("admin",))


def test_bad_input_is_refused_naming_the_field_and_changes_nothing(seeded: Service) -> None:
    # One database for all cases (each case is checked on its own and all failures reported).
    before = snapshot(seeded)
    failures: list[str] = []
    for name, call, field in CASES:
        try:
            call(seeded)
        except (InvalidRequest, TooLarge) as err:
            problem = err.to_problem()
            if (err.field, problem["field"]) != (field, field) or err.status not in (413, 422):
                failures.append(f"{name}: {err!r}, wanted field {field!r}")
        except Exception as err:
            failures.append(f"{name}: raised {err!r}")
        else:
            failures.append(f"{name}: accepted")
        after = snapshot(seeded)
        if after != before:
            failures.append(f"{name}: changed the store")
            before = after
    assert not failures, "\n".join(failures)


def _valid_ttl(x: object) -> bool:
    return x is None or (type(x) is int and 1_000 <= x <= 600_000)


def _valid_token(x: object) -> bool:
    return type(x) is int and 1 <= x < 2**63


anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(ttl=anything.filter(lambda x: not _valid_ttl(x)))
def test_fuzzed_ttls_are_refused_and_change_nothing(seeded: Service, ttl: object) -> None:
    before = snapshot(seeded)
    with pytest.raises(InvalidRequest) as caught:
        seeded.acquire("alice", KEY, ttl_ms=ttl)  # type: ignore[arg-type]
    assert caught.value.field == "ttl_ms"
    assert snapshot(seeded) == before


@FUZZ
@given(token=anything.filter(lambda x: not _valid_token(x)))
def test_fuzzed_tokens_are_refused_and_change_nothing(seeded: Service, token: object) -> None:
    before = snapshot(seeded)
    for call in (
        lambda: seeded.renew("alice", KEY, token),  # type: ignore[arg-type]
        lambda: seeded.extend("alice", KEY, token, by_ms=5_000),  # type: ignore[arg-type]
        lambda: seeded.write("alice", KEY, token, "v"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidRequest) as caught:
            call()
        assert caught.value.field == "token"
    if token is not None:
        with pytest.raises(InvalidRequest):
            seeded.release("alice", KEY, token)  # type: ignore[arg-type]
    assert snapshot(seeded) == before


@FUZZ
@given(
    key=st.builds(
        lambda a, bad, b: a + bad + b,
        st.text(max_size=4),
        st.characters(categories=["Cc", "Cs"]),
        st.text(max_size=4),
    )
)
def test_fuzzed_keys_with_control_characters_or_surrogates_are_refused(
    seeded: Service, key: str
) -> None:
    before = snapshot(seeded)
    with pytest.raises(InvalidRequest) as caught:
        seeded.acquire("bob", key)
    assert caught.value.field == "key"
    assert snapshot(seeded) == before


SURROGATE_CASES: list[tuple[str, Call, str]] = [
    ("task", lambda s: s.acquire("alice", KEY, task="run\ud800"), "task"),
    ("meta", lambda s: s.acquire("alice", KEY, meta={"m": "\udfff"}), "meta"),
    ("meta key", lambda s: s.acquire("alice", KEY, meta={"\ud800": 1}), "meta"),
    ("principal", lambda s: s.acquire("al\udcffice", "jobs/new"), "principal"),
    ("value", lambda s: s.write("alice", KEY, 2, "v\ud800"), "value"),
    ("op_id", lambda s: s.write("alice", KEY, 2, "v", op_id="op\ud800"), "op_id"),
    ("reason", lambda s: s.force_release(ADMIN, KEY, "r\ud800"), "reason"),
]


@pytest.mark.parametrize(
    ("call", "field"), [c[1:] for c in SURROGATE_CASES], ids=[c[0] for c in SURROGATE_CASES]
)
def test_lone_surrogates_are_refused_naming_the_field(
    seeded: Service, call: Call, field: str
) -> None:
    # JSON can carry them ("\ud800"), so an HTTP client can send them.
    before = snapshot(seeded)
    with pytest.raises(InvalidRequest) as caught:
        call(seeded)
    assert caught.value.field == field
    assert snapshot(seeded) == before


NUL_CASES: list[tuple[str, Callable[[Service], Any], Callable[[Service], Any], str]] = [
    (
        "value",
        lambda s: s.write("alice", KEY, 2, {"text": "a\x00b"}),
        lambda s: s.read(KEY).value,
        "value",
    ),
    (
        "meta",
        lambda s: s.acquire("alice", KEY, meta={"text": "a\x00b"}),
        lambda s: s.get(KEY).meta,
        "meta",
    ),
]


@pytest.mark.parametrize(
    ("call", "read", "field"), [c[1:] for c in NUL_CASES], ids=[c[0] for c in NUL_CASES]
)
def test_nul_characters_in_json_behave_the_same_on_both_backends(
    seeded: Service,
    backend: str,
    request: pytest.FixtureRequest,
    call: Callable[[Service], Any],
    read: Callable[[Service], Any],
    field: str,
) -> None:
    """A NUL ("\\u0000") is valid JSON that PostgreSQL's jsonb cannot hold. Either round-trip it
    or refuse it as invalid input, on both backends; never fail with a database error."""
    before = snapshot(seeded)
    try:
        call(seeded)
    except InvalidRequest as err:
        assert err.field == field
        assert snapshot(seeded) == before
    else:
        assert read(seeded) == {"text": "a\x00b"}
