"""Deployment policy (SPEC section 3): defaults, validation, per-prefix overrides."""

from __future__ import annotations

import dataclasses

import pytest

from tenure.core.policy import HOUR, MINUTE, SECOND, Policy, PolicySet


def test_units() -> None:
    assert (SECOND, MINUTE, HOUR) == (1_000, 60_000, 3_600_000)


def test_defaults_match_the_spec() -> None:
    p = Policy()
    assert p.default_ttl == 30_000  # 30 s
    assert p.min_ttl == 1_000  # 1 s
    assert p.max_ttl == 600_000  # 10 min
    assert p.max_lease == 86_400_000  # 24 h
    assert p.max_key_bytes == 512
    assert p.max_meta_bytes == 4_096  # 4 KiB
    assert p.max_value_bytes == 1_048_576  # 1 MiB


def test_policy_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Policy().min_ttl = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    "field", [f.name for f in dataclasses.fields(Policy)], ids=lambda name: name
)
@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", None, True, False], ids=repr)
def test_every_setting_must_be_a_positive_integer(field: str, bad: object) -> None:
    if field == "max_attempts" and bad == 0 and bad is not False:
        assert Policy(max_attempts=0).max_attempts == 0  # 0: never parked
        return
    with pytest.raises(ValueError, match=field):
        Policy(**{field: bad})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes",
    [
        {"min_ttl": 31_000},  # min above default
        {"default_ttl": 999},  # default below min
        {"default_ttl": 600_001},  # default above max
        {"max_ttl": 29_999},  # max below default
        {"max_lease": 599_999},  # max_lease below max_ttl
    ],
    ids=repr,
)
def test_inconsistent_ttls_are_rejected(changes: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        Policy(**changes)


def test_boundaries_are_inclusive() -> None:
    p = Policy(min_ttl=5, default_ttl=5, max_ttl=5, max_lease=5)
    assert (p.min_ttl, p.default_ttl, p.max_ttl, p.max_lease) == (5, 5, 5, 5)


def test_override_returns_a_checked_copy() -> None:
    base = Policy()
    changed = base.override(max_key_bytes=64)
    assert changed.max_key_bytes == 64 and base.max_key_bytes == 512
    assert changed.default_ttl == base.default_ttl
    with pytest.raises(ValueError):
        base.override(max_ttl=10)


def test_a_policy_set_without_overrides_uses_the_default() -> None:
    ps = PolicySet()
    assert ps.default == Policy()
    assert ps.for_key("anything") is ps.default
    custom = Policy(default_ttl=5_000)
    assert PolicySet(custom).for_key("x") is custom


def test_the_longest_matching_prefix_wins() -> None:
    ps = (
        PolicySet()
        .with_prefix("jobs/", max_ttl=60_000)
        .with_prefix("jobs/nightly/", max_ttl=120_000)
        .with_prefix("j", max_ttl=30_000)
    )
    assert ps.for_key("jobs/nightly/report").max_ttl == 120_000
    assert ps.for_key("jobs/nightly").max_ttl == 60_000  # "jobs/nightly/" does not match
    assert ps.for_key("jobs/x").max_ttl == 60_000
    assert ps.for_key("jx").max_ttl == 30_000
    assert ps.for_key("other").max_ttl == Policy().max_ttl
    assert ps.for_key("").max_ttl == Policy().max_ttl


def test_order_of_overrides_does_not_matter() -> None:
    a = PolicySet().with_prefix("a/", max_key_bytes=10).with_prefix("a/b/", max_key_bytes=20)
    b = PolicySet().with_prefix("a/b/", max_key_bytes=20).with_prefix("a/", max_key_bytes=10)
    for key in ("a/b/c", "a/c", "c"):
        assert a.for_key(key) == b.for_key(key)


def test_overrides_apply_on_top_of_the_default_and_do_not_stack() -> None:
    base = Policy(default_ttl=10_000, min_ttl=2_000)
    ps = PolicySet(base).with_prefix("a/", max_key_bytes=10).with_prefix("a/b/", max_ttl=50_000)
    inner = ps.for_key("a/b/c")
    assert (inner.max_ttl, inner.max_key_bytes, inner.min_ttl) == (50_000, 512, 2_000)
    assert ps.for_key("a/x").max_key_bytes == 10


def test_with_prefix_replaces_an_override_of_the_same_prefix_and_copies() -> None:
    first = PolicySet().with_prefix("a/", max_key_bytes=10)
    second = first.with_prefix("a/", max_key_bytes=20)
    assert second.for_key("a/x").max_key_bytes == 20
    assert first.for_key("a/x").max_key_bytes == 10
    assert [prefix for prefix, _ in second.overrides].count("a/") == 1


def test_with_prefix_rejects_an_empty_prefix_and_invalid_limits() -> None:
    with pytest.raises(ValueError):
        PolicySet().with_prefix("", max_key_bytes=10)
    with pytest.raises(ValueError):
        PolicySet().with_prefix("a/", min_ttl=0)
    with pytest.raises(TypeError):
        PolicySet().with_prefix("a/", no_such_setting=1)
