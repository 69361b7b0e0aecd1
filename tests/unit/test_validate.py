"""Input checks of :mod:`tenure.core.validate`: what passes, and the field a refusal names."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenure.core import validate as v
from tenure.core.policy import Policy
from tenure.errors import InvalidRequest, TooLarge

POLICY = Policy()
SMALL = Policy(max_key_bytes=8, max_meta_bytes=16, max_value_bytes=16)


class Opaque:
    """Not JSON; a stable repr keeps test ids the same across xdist workers."""

    def __repr__(self) -> str:
        return "Opaque()"


CONTROL = ["\x00", "\x01", "\x1b", "\x1f", "\x7f", "\x80", "\x9f", "\ud800", "\udfff", "\n", "\t"]


def refused(fn: Callable[[], Any], field: str) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        fn()
    assert info.value.field == field
    assert info.value.code == "invalid_request" and info.value.status == 422
    assert field in info.value.detail
    return info.value


def too_large(fn: Callable[[], Any], field: str, limit: int, size: int) -> TooLarge:
    with pytest.raises(TooLarge) as info:
        fn()
    assert (info.value.field, info.value.limit, info.value.size) == (field, limit, size)
    assert info.value.code == "too_large" and info.value.status == 413
    return info.value


def test_is_int_rejects_bool() -> None:
    assert v.is_int(0) and v.is_int(-5) and v.is_int(2**80)
    assert not v.is_int(True) and not v.is_int(False)
    assert not v.is_int(1.0) and not v.is_int("1") and not v.is_int(None)


# text ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["x", "a b", "line\nbreak", "tab\there", "ünï 🚀", " x "])
def test_check_text_accepts(value: str) -> None:
    assert v.check_text("task", value, 100) == value


@pytest.mark.parametrize(
    "value",
    [None, 1, b"bytes", ["x"], "", "   ", "\t\n", "a\x00b", "a\x1bb", "a\x7fb", "\x85", "\ud800"],
    ids=repr,
)
def test_check_text_rejects(value: object) -> None:
    refused(lambda: v.check_text("task", value, 100), "task")


def test_check_text_length_and_optional_emptiness() -> None:
    assert v.check_text("f", "x" * 10, 10) == "x" * 10
    refused(lambda: v.check_text("f", "x" * 11, 10), "f")
    assert v.check_text("f", "", 10, required=False) == ""
    refused(lambda: v.check_text("f", None, 10, required=False), "f")


def test_check_task() -> None:
    assert v.check_task(None) is None
    assert v.check_task("run-42") == "run-42"
    assert v.check_task("x" * v.MAX_TASK_CHARS) == "x" * v.MAX_TASK_CHARS
    refused(lambda: v.check_task("x" * (v.MAX_TASK_CHARS + 1)), "task")
    refused(lambda: v.check_task(""), "task")
    refused(lambda: v.check_task(7), "task")


# keys ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key", ["k", "jobs/nightly-report", "items/42", " ", "ünï/🚀", "a b/c?d#e%20"], ids=repr
)
def test_check_key_accepts(key: str) -> None:
    assert v.check_key(key, POLICY) == key


@pytest.mark.parametrize("key", [None, "", 1, True, b"k", ["k"]], ids=repr)
def test_check_key_rejects_non_strings_and_empty(key: object) -> None:
    refused(lambda: v.check_key(key, POLICY), "key")


@pytest.mark.parametrize("ch", CONTROL, ids=repr)
def test_check_key_rejects_control_characters_and_surrogates(ch: str) -> None:
    refused(lambda: v.check_key(f"a{ch}b", POLICY), "key")
    refused(lambda: v.check_key(ch, POLICY), "key")


def test_check_key_counts_utf8_bytes() -> None:
    assert v.check_key("x" * 512, POLICY)
    too_large(lambda: v.check_key("x" * 513, POLICY), "key", 512, 513)
    assert v.check_key("é" * 4, SMALL) == "é" * 4  # 8 bytes
    too_large(lambda: v.check_key("é" * 4 + "x", SMALL), "key", 8, 9)
    too_large(lambda: v.check_key("🚀🚀🚀", SMALL), "key", 8, 12)


def test_check_key_names_the_field_it_was_given() -> None:
    refused(lambda: v.check_key("", POLICY, field="keys"), "keys")
    too_large(lambda: v.check_key("x" * 9, SMALL, field="prefix"), "prefix", 8, 9)


def test_key_pattern_agrees_with_the_check() -> None:
    pattern = re.compile(v.KEY_PATTERN)
    for ch in CONTROL:
        assert not pattern.match(f"a{ch}b")
    for key in ("k", "ünï/🚀", " "):
        assert pattern.match(key)
    assert not pattern.match("")


# ttl and integers ---------------------------------------------------------------------------
def test_check_ttl() -> None:
    assert v.check_ttl(None, POLICY) == 30_000
    assert v.check_ttl(1_000, POLICY) == 1_000
    assert v.check_ttl(600_000, POLICY) == 600_000
    custom = Policy(default_ttl=5_000)
    assert v.check_ttl(None, custom) == 5_000


@pytest.mark.parametrize("ttl", [999, 600_001, 0, -1, True, 1_000.0, "1000", [1000]], ids=repr)
def test_check_ttl_rejects(ttl: object) -> None:
    refused(lambda: v.check_ttl(ttl, POLICY), "ttl_ms")


def test_check_ttl_names_the_field_it_was_given() -> None:
    refused(lambda: v.check_ttl(0, POLICY, field="by_ms"), "by_ms")


def test_check_positive() -> None:
    assert v.check_positive("n", 1) == 1
    assert v.check_positive("n", v.MAX_TOKEN) == v.MAX_TOKEN
    assert v.check_positive("n", 10, maximum=10) == 10
    for bad in (0, -1, v.MAX_TOKEN + 1, True, False, 1.0, "1", None):
        refused(lambda bad=bad: v.check_positive("n", bad), "n")
    refused(lambda: v.check_positive("n", 11, maximum=10), "n")


def test_check_token() -> None:
    assert v.MAX_TOKEN == 2**63 - 1
    assert v.check_token(7) == 7
    for bad in (0, -3, 2**63, True, "7", 7.0, None):
        refused(lambda bad=bad: v.check_token(bad), "token")
    refused(lambda: v.check_token(0, field="epoch"), "epoch")


def test_check_optional_token() -> None:
    assert v.check_optional_token(None) is None
    assert v.check_optional_token(3) == 3
    refused(lambda: v.check_optional_token(False), "token")
    refused(lambda: v.check_optional_token(0, field="epoch"), "epoch")


def test_check_instant() -> None:
    assert v.check_instant("until", 0) == 0
    assert v.check_instant("until", v.MAX_TOKEN) == v.MAX_TOKEN
    for bad in (-1, v.MAX_TOKEN + 1, True, 1.5, "0", None):
        refused(lambda bad=bad: v.check_instant("until", bad), "until")


def test_check_limit() -> None:
    assert v.check_limit(1) == 1
    assert v.check_limit(v.MAX_LIMIT) == v.MAX_LIMIT
    for bad in (0, v.MAX_LIMIT + 1, True, "5", None):
        refused(lambda bad=bad: v.check_limit(bad), "limit")


def test_check_cursor() -> None:
    assert v.check_cursor(0) == 0
    assert v.check_cursor(v.MAX_TOKEN) == v.MAX_TOKEN
    for bad in (-1, v.MAX_TOKEN + 1, True, False, 1.0, "3", None):
        refused(lambda bad=bad: v.check_cursor(bad), "after")


# JSON sizes: meta and values ----------------------------------------------------------------
def test_json_size_is_compact_utf8() -> None:
    assert v.json_size("v", {"a": [1, 2]}) == len('{"a":[1,2]}')
    assert v.json_size("v", "é") == 4  # '"é"' in UTF-8
    assert v.json_size("v", None) == 4


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), {1, 2}, Opaque(), b"x", {"a": "\ud800"}], ids=repr
)
def test_json_size_rejects_what_is_not_json(value: object) -> None:
    refused(lambda: v.json_size("value", value), "value")


def test_check_meta_accepts_objects() -> None:
    assert v.check_meta(None, POLICY) is None
    assert v.check_meta({}, POLICY) == {}
    meta = {"a": 1, "nested": {"b": [None, True, "x"]}}
    assert v.check_meta(meta, POLICY) is meta


@pytest.mark.parametrize(
    "meta", [[], "x", 1, True, {1: "a"}, {"a": float("nan")}, {"a": Opaque()}], ids=repr
)
def test_check_meta_rejects_non_objects(meta: object) -> None:
    refused(lambda: v.check_meta(meta, POLICY), "meta")


def test_check_meta_size_limit() -> None:
    at_limit = {"a": "x" * 8}  # {"a":"xxxxxxxx"} is 16 bytes
    assert v.json_size("meta", at_limit) == 16
    assert v.check_meta(at_limit, SMALL) == at_limit
    too_large(lambda: v.check_meta({"a": "x" * 9}, SMALL), "meta", 16, 17)
    big = {"k": "x" * 4_096}
    too_large(lambda: v.check_meta(big, POLICY), "meta", 4_096, v.json_size("meta", big))


def test_check_value() -> None:
    for value in (None, 0, -1.5, "", [], {}, {"a": [1]}, True):
        assert v.check_value(value, POLICY) == value
    assert v.check_value("x" * 14, SMALL) == "x" * 14  # 16 bytes with quotes
    too_large(lambda: v.check_value("x" * 15, SMALL), "value", 16, 17)
    refused(lambda: v.check_value(float("nan"), POLICY), "value")
    refused(lambda: v.check_value("\udc80", POLICY), "value")
    big = "x" * (1024 * 1024)
    too_large(lambda: v.check_value(big, POLICY), "value", 1024 * 1024, 1024 * 1024 + 2)


@given(st.text())
def test_check_text_refuses_exactly_control_characters_and_surrogates(value: str) -> None:
    """Its fast path (printable text) and its per-character check agree with the rule."""
    bad = any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value if ch not in "\t\n")
    if bad or not value.strip():
        refused(lambda: v.check_text("task", value, 10_000), "task")
    else:
        assert v.check_text("task", value, 10_000) == value


def _nested(levels: int) -> Any:
    value: Any = 1
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


@pytest.mark.parametrize("levels", [1, 2, v.MAX_JSON_DEPTH])
def test_json_nested_up_to_the_bound_is_accepted(levels: int) -> None:
    value = _nested(levels)
    assert v.check_value(value, POLICY) == value
    assert v.check_meta({"m": _nested(levels - 1)}, POLICY) == {"m": _nested(levels - 1)}


@pytest.mark.parametrize("levels", [v.MAX_JSON_DEPTH + 1, 600, 100_000])
def test_json_nested_past_the_bound_is_refused_without_recursing(levels: int) -> None:
    # 100,000 levels is past any recursive encoder's limit: the count must not recurse
    with pytest.raises(InvalidRequest) as caught:
        v.check_value(_nested(levels), POLICY, "result")
    assert caught.value.field == "result" and str(v.MAX_JSON_DEPTH) in str(caught.value)
    with pytest.raises(InvalidRequest) as caught:
        v.check_meta({"m": _nested(levels)}, POLICY, "data")
    assert caught.value.field == "data"


def test_a_value_that_contains_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(InvalidRequest) as caught:
        v.check_value(loop, POLICY)
    assert caught.value.field == "value"


@pytest.mark.parametrize(
    "value",
    [
        "a\x00b",
        {"a": ["\x00"]},
        {"\x00": 1},
        {"a": {"b\\\x00": 1}},  # a backslash, then NUL
        {"a": {1: "b"}},  # a key JSON does not have
        {"a": {None: "b"}},
    ],
    ids=repr,
)
def test_nul_and_keys_that_are_not_strings_are_refused_at_any_depth(value: Any) -> None:
    with pytest.raises(InvalidRequest) as caught:
        v.check_value(value, POLICY)
    assert caught.value.field == "value"


@pytest.mark.parametrize("text", ["\\u0000", "\\\\u0000", "a\\\\\\\\u0000", "\\\\\\u0000"])
def test_text_that_only_looks_like_an_escaped_nul_is_accepted(text: str) -> None:
    assert v.check_value({"t": text}, POLICY) == {"t": text}


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(), kids, max_size=3),
    max_leaves=8,
)


@given(value=JSON)
def test_what_the_value_check_accepts_reads_back_as_json(value: Any) -> None:
    try:
        v.check_value(value, POLICY)
    except InvalidRequest:
        return  # a lone surrogate or a NUL in the text
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    assert json.loads(text.encode("utf-8")) == value


def test_a_ttl_too_long_says_how_to_hold_longer() -> None:
    """Over every front (REST, MCP): the refusal of a ttl past max_ttl names the way to hold a
    lease longer (extend, up to max_lease; or renew), and a ttl too short does not."""
    with pytest.raises(InvalidRequest) as long:
        v.check_ttl(3_600_000, POLICY)
    assert long.value.maximum == 600_000 and long.value.field == "ttl_ms"
    assert "to hold it longer, acquire it, then extend its deadline" in long.value.detail
    assert f"max_lease: {POLICY.max_lease} ms" in long.value.detail
    with pytest.raises(InvalidRequest) as short:
        v.check_ttl(10, POLICY)
    assert "longer" not in short.value.detail
