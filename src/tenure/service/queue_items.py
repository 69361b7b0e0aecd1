"""New items: their checked fields (:class:`ItemDraft`), from ``POST /v1/items`` or a
completion's ``follow_ups``, and the event that records a creation."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenure.core import validate as v
from tenure.core.items import Item, item_key
from tenure.core.models import EventDraft, Principal
from tenure.core.validate import MAX_BODY_CHARS, MAX_FOLLOW_UPS, MAX_LABELS, MAX_TITLE_CHARS
from tenure.errors import InvalidRequest
from tenure.service.queue_views import check_item_id

DRAFT_FIELDS = ("title", "body", "priority", "labels", "id")


def check_labels(labels: object) -> tuple[str, ...]:
    if isinstance(labels, str) or not isinstance(labels, list | tuple):
        raise InvalidRequest("labels: a list of strings", field="labels")
    if len(labels) > MAX_LABELS:
        raise InvalidRequest(f"labels: at most {MAX_LABELS}", field="labels")
    return tuple(dict.fromkeys(v.check_text("labels", label, 64) for label in labels))


def check_priority(priority: object) -> int:
    if not v.is_int(priority) or not 0 <= priority <= 1000:  # type: ignore[operator]
        raise InvalidRequest("priority: an integer from 0 (most urgent) to 1000", field="priority")
    assert isinstance(priority, int)
    return priority


@dataclass(frozen=True)
class ItemDraft:
    """The checked fields of an item to create; :meth:`item` stamps it with the instant."""

    id: str
    title: str
    body: str
    priority: int
    labels: tuple[str, ...]
    parent: str | None
    created_by: str

    @staticmethod
    def check(
        me: Principal, fields: Mapping[str, Any], parent: str | None, prefix: str = ""
    ) -> ItemDraft:
        """``fields`` (``title`` and optionally ``body``, ``priority``, ``labels``, ``id``)
        checked; errors name ``prefix`` + the field (``follow_ups[2].title``)."""
        unknown = sorted(set(fields) - set(DRAFT_FIELDS))
        if unknown:
            raise InvalidRequest(f"{prefix}{unknown[0]}: unknown field", field=prefix + unknown[0])
        try:
            item_id = fields.get("id")
            return ItemDraft(
                check_item_id(item_id) if item_id is not None else f"it-{secrets.token_hex(5)}",
                v.check_text("title", fields.get("title"), MAX_TITLE_CHARS),
                v.check_text("body", fields.get("body", ""), MAX_BODY_CHARS, required=False),
                check_priority(fields.get("priority", 2)),
                check_labels(fields.get("labels", ())),
                None if parent is None else check_item_id(parent, "parent"),
                me.name,
            )
        except InvalidRequest as err:
            if not prefix:
                raise
            raise InvalidRequest(f"{prefix}{err.detail}", field=f"{prefix}{err.field}") from None

    def item(self, now: int) -> Item:
        return Item(
            self.id,
            self.title,
            self.body,
            "open",
            self.priority,
            self.labels,
            self.parent,
            created_by=self.created_by,
            created_at=now,
            updated_at=now,
        )


def follow_up_drafts(me: Principal, follow_ups: object, parent: str) -> tuple[ItemDraft, ...]:
    """The checked ``follow_ups`` of a completion: the items it creates under ``parent``."""
    if not isinstance(follow_ups, list | tuple) or len(follow_ups) > MAX_FOLLOW_UPS:
        raise InvalidRequest(
            f"follow_ups: a list of at most {MAX_FOLLOW_UPS} items", field="follow_ups"
        )
    drafts = []
    for n, fields in enumerate(follow_ups):
        if not isinstance(fields, Mapping):
            raise InvalidRequest(f"follow_ups[{n}]: an object", field=f"follow_ups[{n}]")
        drafts.append(ItemDraft.check(me, fields, parent, f"follow_ups[{n}]."))
    ids = [d.id for d in drafts]
    if len(set(ids)) != len(ids):
        raise InvalidRequest("follow_ups: each id once", field="follow_ups")
    return tuple(drafts)


def created_event(item: Item, who: Principal) -> EventDraft:
    """``item_created``: who created which item, under which parent."""
    return EventDraft(
        "item_created",
        item_key(item.id),
        None,
        None,
        None,
        actor=who.name,
        data={"item": item.id, "parent": item.parent, "title": item.title},
    )


__all__ = [
    "MAX_BODY_CHARS",
    "MAX_FOLLOW_UPS",
    "MAX_LABELS",
    "MAX_TITLE_CHARS",
    "ItemDraft",
    "check_labels",
    "check_priority",
    "created_event",
    "follow_up_drafts",
]
