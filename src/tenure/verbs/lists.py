"""Lists travel in pages: at most a page cap of entries, and no more JSON than the server's list
budget (``TENURE_LIST_BYTES``); a page cut short says so and where the next one starts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
#: what a list's JSON costs besides its entries (`{"leases":[…],"truncated":false,"next":…}`)
OVERHEAD = 1024


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its entries, and where the next page starts when the server cut
    this one short (``truncated``: its list budget or page cap; ``next``: the cursor)."""

    entries: list[T] = field(default_factory=list)
    next: str | None = None
    truncated: bool = False

    @property
    def more(self) -> bool:
        return self.truncated and self.next is not None


def fitting(entries: Sequence[T], render: Callable[[T], dict[str, Any]], budget: int) -> int:
    """How many of ``entries`` (always the first) fit in ``budget`` bytes of JSON."""
    used = OVERHEAD
    for count, entry in enumerate(entries):
        used += len(json.dumps(render(entry), ensure_ascii=False, separators=(",", ":"))) + 1
        if count and used > budget:
            return count
    return len(entries)
