"""The pure parts of semaphores: slot keys, free slots, and how a full semaphore is told."""

from __future__ import annotations

import pytest

from tenure.core import semaphores as s
from tenure.core.models import KeyRecord
from tenure.core.text import held
from tenure.errors import InvalidRequest


def rec(key: str, holder: str, expires_at: int, session: str = "") -> KeyRecord:
    return KeyRecord(
        key=key, token=1, holder=holder, task=None, ttl_ms=1, acquired_at=0, renewed_at=0,
        expires_at=expires_at, session=session,
    )  # fmt: skip


def test_slot_keys_name_their_semaphore() -> None:
    assert s.slot_key("gpu", 2) == "gpu#slot/2"
    assert s.semaphore_of("gpu#slot/2") == ("gpu", 2)
    assert s.semaphore_of("a/b#slot/1#slot/0") == ("a/b#slot/1", 0)
    for plain in ("gpu", "gpu#slot/", "gpu#slot/x", "#slot/1", "gpu#slot/-1"):
        assert s.semaphore_of(plain) is None, plain


def test_free_slots_and_your_own() -> None:
    held_now = [rec("gpu#slot/0", "a", 5), rec("gpu#slot/2", "b", 3, "w1")]
    assert s.free_slots(held_now, 4) == [1, 3]
    assert s.free_slots(held_now, 2) == [1]
    assert s.mine(held_now, "b", "w1") is held_now[1]
    assert s.mine(held_now, "b", "") is None


def test_a_full_semaphore_names_every_holder_and_the_first_to_end() -> None:
    err = s.full("gpu", 2, [rec("gpu#slot/1", "b", 9), rec("gpu#slot/0", "a", 4)])
    assert (err.holders, err.slots, err.holder, err.held_key) == (["a", "b"], 2, "a", "gpu#slot/0")
    assert held(err, str, False) == "gpu all 2 slots held, by a, b; the first frees until 4"


@pytest.mark.parametrize("bad", [0, 1001, "3", 2.0, True, None])
def test_slots_are_a_whole_number_from_1_to_1000(bad: object) -> None:
    with pytest.raises(InvalidRequest) as caught:
        s.check_slots(bad)
    assert (caught.value.field, caught.value.maximum) == ("slots", 1000)


def test_a_slot_key_is_not_acquired_plainly() -> None:
    s.check_plain_key("gpu")
    with pytest.raises(InvalidRequest, match="acquire 'gpu' with slots"):
        s.check_plain_key("gpu#slot/0")
