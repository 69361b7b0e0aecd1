"""The hot-path shortcuts of the models and rows give what the generic code gives."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenure.core.decide import Decision
from tenure.core.frozen import quick_init
from tenure.core.models import EventDraft, KeyRecord, Lease, Principal
from tenure.store import rows


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.dictionaries(st.text(), st.integers(), max_size=4),
        st.dictionaries(st.text(), st.integers() | st.booleans() | st.none(), max_size=4),
        st.lists(st.integers(), max_size=2),
    )
)
def test_rows_dumps_is_the_json_modules_text(value: Any) -> None:
    assert rows.dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _reference(cls: type[Any]) -> type[Any]:
    """The same frozen dataclass with the ``__init__`` dataclasses writes."""
    spec = [
        (f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
        for f in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True)


@pytest.mark.parametrize("cls", [KeyRecord, Lease, EventDraft, Principal, Decision])
def test_quick_init_takes_what_the_dataclass_init_takes(cls: type[Any]) -> None:
    ref = _reference(cls)
    fields = dataclasses.fields(cls)
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    values = {name: f"v-{name}" for name in required}
    for args, kwargs in [((), values), (tuple(values.values()), {})]:
        quick, plain = cls(*args, **kwargs), ref(*args, **kwargs)
        assert vars(quick) == vars(plain)  # every field, defaults and factories included
        assert repr(quick).partition("(")[2] == repr(plain).partition("(")[2]
    every = {f.name: f"all-{f.name}" for f in fields}
    assert vars(cls(**every)) == vars(ref(**every)) == every
    assert cls(**values) == cls(**values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cls(**values).x = 1
    with pytest.raises(TypeError):
        cls(**values, bogus=1)
    with pytest.raises(TypeError):
        cls(*required[:-1]) if required else cls(*[0] * (len(fields) + 1))


def test_a_default_factory_gives_each_instance_its_own() -> None:
    a = KeyRecord("k", 1, "h", None, 1, 1, 1, 1)
    b = KeyRecord("k", 1, "h", None, 1, 1, 1, 1)
    assert a.meta == {} and a.meta is not b.meta


def test_quick_init_refuses_what_it_cannot_copy() -> None:
    class Plain:
        pass

    @dataclasses.dataclass
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for cls in (Plain, Mutable, Post, Slotted):
        with pytest.raises(TypeError):
            quick_init(cls)
