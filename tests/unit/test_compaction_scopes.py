"""The scopes of compaction's retention ages: each key falls in exactly one, whose age is its
policy's (the longest matching prefix); overrides that keep their enclosing age need no scope."""

from __future__ import annotations

import pytest

from tenure.core.compaction import CompactionResult, Scope, lease_retention, op_window, scopes
from tenure.core.policy import HOUR, Policy, PolicySet


def scope_of(found: list[Scope], key: str) -> Scope:
    """The scope ``key`` falls in: the only one whose prefix it has and whose skips it has not."""
    (scope,) = [
        s for s in found if key.startswith(s.prefix) and not any(key.startswith(p) for p in s.skip)
    ]
    return scope


def test_no_override_is_one_scope() -> None:
    assert scopes(PolicySet(), lease_retention) == [Scope("", (), Policy().lease_retention)]


def test_overrides_of_another_setting_need_no_scope() -> None:
    policy = PolicySet().with_prefix("files/", default_ttl=60_000)
    assert scopes(policy, lease_retention) == [Scope("", (), Policy().lease_retention)]


@pytest.mark.parametrize(
    "key", ["a", "tmp/x", "tmp/keep/x", "tmp/keep/short/x", "tmpx", "jobs/x", "jobs/y/z"]
)
def test_every_key_falls_in_one_scope_with_its_policys_age(key: str) -> None:
    policy = (
        PolicySet()
        .with_prefix("tmp/", lease_retention=HOUR, op_window=60_000)
        .with_prefix("tmp/keep/", lease_retention=Policy().lease_retention)
        .with_prefix("tmp/keep/short/", lease_retention=2 * HOUR)
        .with_prefix("jobs/", lease_retention=Policy().lease_retention)  # the default's own
    )
    for age in (lease_retention, op_window):
        assert scope_of(scopes(policy, age), key).age_ms == age(policy.for_key(key))
    assert len(scopes(policy, lease_retention)) == 4  # "", tmp/, tmp/keep/, tmp/keep/short/


def test_the_result_reads_back_from_its_wire_form() -> None:
    done = CompactionResult(1, 2, 3, 4, 5, 600, 7, False, 8)
    assert CompactionResult.from_wire(done.to_dict()) == done
    assert done.deleted == 15
