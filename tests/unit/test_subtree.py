"""The pure subtree rules (:mod:`tenure.core.subtree`): prefixes, what lies under what, and which
lease blocks an acquisition (and is named)."""

from __future__ import annotations

from tenure.core.models import KeyRecord
from tenure.core.subtree import ancestors, blocking, reaches, under, upper_bound

NOW = 1_000


def rec(key: str, holder: str = "bo", scope: str = "key", **kw: object) -> KeyRecord:
    fields: dict[str, object] = {"expires_at": NOW + 10, "session": "", "ended": None, **kw}
    return KeyRecord(
        key, 1, holder, None, 10, NOW, NOW, fields["expires_at"],  # type: ignore[arg-type]
        session=fields["session"], ended=fields["ended"], scope=scope,  # type: ignore[arg-type]
    )  # fmt: skip


def test_ancestors_are_the_proper_prefixes_ending_in_a_slash() -> None:
    assert ancestors("a/b/c") == ("a/", "a/b/")
    assert ancestors("a/b/") == ("a/",)
    assert ancestors("a") == () and ancestors("a/") == ()
    assert ancestors("/x") == ("/",) and ancestors("a//b") == ("a/", "a//")


def test_under_is_strict_and_literal() -> None:
    assert under("a/b/", "a/b/c") and under("a/b/", "a/b/x/y")
    assert not under("a/b/", "a/b/") and not under("a/b/", "a/bc") and not under("a/b/", "a/b")
    assert upper_bound("a/b/") == "a/b0"
    assert all("a/b/" <= k < upper_bound("a/b/") for k in ("a/b/", "a/b/zz", "a/b/\uffff"))
    assert not "a/b/" <= "a/b0" < upper_bound("a/b/")


def test_reaches_by_place_in_the_tree() -> None:
    assert reaches("a/b/c", "key", rec("a/", scope="subtree"))
    assert not reaches("a/b/c", "key", rec("a/"))  # a plain key above covers nothing
    assert reaches("a/", "subtree", rec("a/b/c"))
    assert not reaches("a/", "key", rec("a/b/c"))
    assert reaches("a/b/", "subtree", rec("a/", scope="subtree"))
    assert not reaches("a/b/", "subtree", rec("a/b/"))  # the key itself: its own record


def test_blocking_skips_yourself_and_what_is_not_live() -> None:
    mine = rec("a/", holder="jo", scope="subtree", session="w")
    assert blocking("a/x", "key", "jo", "w", [mine], NOW) is None
    assert blocking("a/x", "key", "jo", "other", [mine], NOW) is mine  # another session
    lapsed = rec("a/", scope="subtree", expires_at=NOW)
    ended = rec("a/", scope="subtree", ended="released")
    assert blocking("a/x", "key", "jo", "", [lapsed, ended], NOW) is None


def test_blocking_names_the_nearest_subtree_above_then_the_smallest_key_under() -> None:
    top, mid = rec("a/", scope="subtree"), rec("a/b/", scope="subtree")
    assert blocking("a/b/c", "key", "jo", "", [top, mid], NOW) is mid
    low, high = rec("a/b/z"), rec("a/b/c")
    assert blocking("a/b/", "subtree", "jo", "", [low, high, top], NOW) is top
    assert blocking("a/b/", "subtree", "jo", "", [low, high], NOW) is high
