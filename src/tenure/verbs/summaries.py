"""Lists carry summaries, within a byte budget.

A list of items leaves out what can be large: an item's ``body`` (up to 64 K characters), its
``result`` (up to 1 MiB) and its progress's ``data``; it says how long the body is
(``body_chars``) and whether there is a result (``has_result``). ``GET /v1/items/{id}`` has the
whole item. Every list reply stops adding entries once its JSON would pass the server's list
budget (``TENURE_LIST_BYTES``): it then says ``truncated: true`` and gives the cursor of the
next page in ``next`` (also when the page is full at its ``limit``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tenure.core.items import Item, ItemCursor, ItemSummary, ItemView, item_cursor
from tenure.errors import InvalidRequest

T = TypeVar("T")
CURSOR = re.compile(r"(-?[0-9]{1,19}):(-?[0-9]{1,19}):([A-Za-z0-9][A-Za-z0-9._-]{0,127})")
BIG = 1 << 63
#: what a list's JSON costs besides its entries (`{"items":[…],"truncated":false,"next":…}`)
OVERHEAD = 1024


def item_summary(item: Item) -> dict[str, Any]:
    """The summary of a whole item (read from the store with its body and result)."""
    return summary_out(ItemSummary(item, len(item.body), item.result is not None))


def summary_out(summary: ItemSummary) -> dict[str, Any]:
    out = summary.item.to_dict()
    del out["body"], out["result"]
    out["body_chars"] = summary.body_chars
    out["has_result"] = summary.has_result
    if out["progress"] is not None:
        out["progress"] = {k: v for k, v in out["progress"].items() if k != "data"}
    return out


def view_summary(view: ItemView) -> dict[str, Any]:
    out = view.to_dict()
    out["item"] = item_summary(view.item)
    return out


def within(
    entries: Sequence[T], render: Callable[[T], dict[str, Any]], budget: int
) -> tuple[list[dict[str, Any]], bool]:
    """``entries`` rendered while their JSON stays within ``budget`` bytes (always the first),
    and whether the budget cut the list."""
    out: list[dict[str, Any]] = []
    used = OVERHEAD
    for entry in entries:
        doc = render(entry)
        used += len(json.dumps(doc, ensure_ascii=False, separators=(",", ":"))) + 1
        if out and used > budget:
            return out, True
        out.append(doc)
    return out, False


def items_page(items: Sequence[ItemSummary], limit: int, budget: int) -> dict[str, Any]:
    """A page of ``GET /v1/items``: summaries, ``truncated`` and the ``next`` cursor."""
    docs, cut = within(items, summary_out, budget)
    more = cut or len(items) >= limit
    next_ = encode_cursor(item_cursor(items[len(docs) - 1].item)) if more and docs else None
    return {"items": docs, "truncated": cut, "next": next_}


def views_page(views: Sequence[ItemView], budget: int) -> dict[str, Any]:
    """A queue: item views with item summaries, within the budget."""
    docs, cut = within(views, view_summary, budget)
    return {"items": docs, "truncated": cut}


def encode_cursor(cursor: ItemCursor) -> str:
    priority, created_at, item_id = cursor
    return f"{priority}:{created_at}:{item_id}"


def decode_cursor(text: str | None) -> ItemCursor | None:
    """The cursor a page's ``next`` gave (``priority:created_at:id``)."""
    if text is None:
        return None
    match = CURSOR.fullmatch(text)
    if match is None or not all(-BIG <= int(n) < BIG for n in match.group(1, 2)):
        raise InvalidRequest(
            "after: not a cursor of this list. Pass the `next` of the previous page.",
            field="after",
        )
    return int(match[1]), int(match[2]), match[3]
