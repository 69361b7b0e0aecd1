"""The blocking client is generated from the asyncio one: the checked-in files are current.

``scripts/gen_sync.py`` rewrites each async module (``aio.py``, ``_handles_aio.py``,
``_items_aio.py``) into its blocking twin; this test regenerates them in memory and compares.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_sync", ROOT / "scripts" / "gen_sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_sync"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GEN = load_generator()


@pytest.mark.parametrize("pair", GEN.PAIRS, ids=lambda pair: pair.target)
def test_the_generated_file_is_current(pair: object) -> None:
    target = GEN.CLIENT / pair.target  # type: ignore[attr-defined]
    assert target.read_text() == GEN.generate(pair), (
        f"src/tenure/client/{pair.target} is not what {pair.source} gives: "  # type: ignore[attr-defined]
        f"run `{GEN.COMMAND}` and commit the result (never edit the generated file)"
    )


@pytest.mark.parametrize("pair", GEN.PAIRS, ids=lambda pair: pair.target)
def test_the_generated_file_is_blocking_and_says_so(pair: object) -> None:
    text = (GEN.CLIENT / pair.target).read_text()  # type: ignore[attr-defined]
    assert text.startswith(f"# generated from {pair.source} by {GEN.COMMAND}; do not edit\n")  # type: ignore[attr-defined]
    code = re.sub(r'"""[\s\S]*?"""', "", text)  # docstrings may name the async twin
    assert not re.search(r"\b(async|await|asyncio)\b", code)
    assert not re.search(r"\bAsync\w+", code)


def test_the_rules_rewrite_a_coroutine_into_a_function() -> None:
    pair = GEN.Pair("x_aio.py", "x.py", "Doc.")
    source = '''"""Async doc."""

from __future__ import annotations

import asyncio

from tenure.client._held_aio import AsyncCaller, _AsyncHeld


class AsyncThing(_AsyncHeld):
    async def __aenter__(self) -> AsyncThing:
        async with self._lock:
            await asyncio.sleep(1)
        return self
'''
    out = GEN.rewrite(source, pair)
    assert "from tenure.client._held import Caller, _SyncHeld" in out
    assert "class Thing(_SyncHeld):" in out
    assert "    def __enter__(self) -> Thing:" in out
    assert "        with self._lock:\n            time.sleep(1)" in out
    assert "import asyncio" not in out
    assert out.startswith(
        '# generated from x_aio.py by python scripts/gen_sync.py; do not edit\n"""Doc."""'
    )


def test_a_phrase_the_source_no_longer_says_stops_the_generator() -> None:
    pair = GEN.Pair("x_aio.py", "x.py", "Doc.", (("heartbeat task runs", "thread runs"),))
    with pytest.raises(SystemExit, match="no longer says"):
        GEN.rewrite('"""Doc."""\nfrom __future__ import annotations\n', pair)
