"""The hot-path shortcuts of the models and rows give what the generic code gives."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tenure.core.models import KeyRecord
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


def test_a_default_factory_gives_each_instance_its_own() -> None:
    a = KeyRecord("k", 1, "h", None, 1, 1, 1, 1)
    b = KeyRecord("k", 1, "h", None, 1, 1, 1, 1)
    assert a.meta == {} and a.meta is not b.meta
