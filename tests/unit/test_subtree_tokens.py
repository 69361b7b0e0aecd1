"""The pure rules of tokens that cannot go back (the floor from the clock) and of tokens ordered
across a subtree and the keys under it."""

from __future__ import annotations

from tenure.core.models import KeyRecord
from tenure.core.subtree_tokens import GrantAbove, current_above, prefixes_above, tree_floor
from tenure.core.token_floor import floor_from_clock


def rec(key: str, token: int, scope: str = "key", fence_open: bool = True) -> KeyRecord:
    return KeyRecord(
        key, token, "jo", None, 1000, 0, 0, 1000, 0, {}, None, fence_open, 0, "", scope
    )  # type: ignore[arg-type]


def test_the_floor_from_the_clock_is_now_in_microseconds_and_only_grows() -> None:
    event = floor_from_clock(7, 1_700_000_000_000, "restart")
    assert event is not None and event.type == "token_floor_set" and event.reason == "restart"
    assert event.data == {"from": 7, "to": 1_700_000_000_000_000}
    assert floor_from_clock(1_700_000_000_000_000, 1_700_000_000_000, "reconnect") is None


def test_items_are_in_no_tree() -> None:
    assert prefixes_above("items/abc") == ()
    assert prefixes_above("a/b/c") == ("a/", "a/b/")


def test_a_subtree_floor_covers_the_keys_under_it_a_key_only_the_subtrees_above() -> None:
    above = GrantAbove(5, rec("a/", 5, "subtree"))
    assert tree_floor("key", above, 9) == 5
    assert tree_floor("subtree", above, 9) == 9
    assert tree_floor("key", None, 9) == 0


def test_the_grant_above_is_current_only_while_newer_than_the_key() -> None:
    above = GrantAbove(5, rec("a/", 5, "subtree"))
    assert current_above(None, above) is above
    assert current_above(rec("a/x", 4), above) is above
    assert current_above(rec("a/x", 6), above) is None


def test_only_the_subtree_lease_that_carries_the_grant_holds_it() -> None:
    assert GrantAbove(5, rec("a/", 5, "subtree")).holds() is not None
    assert GrantAbove(5, rec("a/", 6, "key")).holds() is None  # acquired again since
    assert GrantAbove(5, rec("a/", 5, "subtree", fence_open=False)).holds() is None  # forced
    assert GrantAbove(5, None).holds() is None
