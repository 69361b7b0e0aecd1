"""What ``tenure queue`` says about dispatched items that went back to open: the supervisor of
``tenure dispatch`` leaves a progress report on an item whose command ended without completing
it (:data:`tenure.cli.agent.LEFT_OPEN`) before it releases the claim; the queue finds those
reports of the principal's agents among the latest events and names the items still open."""

from __future__ import annotations

import re
from typing import Any

from tenure.cli import eventlog
from tenure.cli.agent import LEFT_OPEN
from tenure.cli.context import Cli
from tenure.core.models import Event
from tenure.core.text import when
from tenure.errors import TenureError
from tenure.verbs.ops import Filters

LOOK_BACK = 5000  # event ids
SHOWN = 5  # items at most


def left_open(run: Cli, principal: str | None) -> list[dict[str, Any]]:
    """The items the agents of ``principal`` (default: you) left open lately, newest first:
    ``{"item", "agent", "at", "message"}``."""
    try:
        me = principal or run.client.me().name
        progress = Filters(type="progress")
        found, _ = eventlog.latest(run.client, 100, progress, within=LOOK_BACK)
    except TenureError:  # only a note under the queue: never worse than the queue itself
        return []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for event in reversed(found):
        item = str(event.data.get("item") or "")
        if item in seen or not _reported(event, me):
            continue
        seen.add(item)
        if _still_open(run, item):
            message = str(event.data.get("message"))
            out.append({"item": item, "agent": event.actor, "at": event.at, "message": message})
        if len(out) == SHOWN:
            break
    return out


def _reported(event: Event, me: str) -> bool:
    message = str(event.data.get("message") or "")
    return message.startswith(LEFT_OPEN) and (event.actor or "").startswith(me + "/")


def _still_open(run: Cli, item: str) -> bool:
    try:
        view = run.client.items.get(item)
    except TenureError:
        return False
    return view.item.status == "open" and not view.item.assignee


def _status(message: str) -> str:
    found = re.search(r"status (\d+)", message)
    return f" with status {found.group(1)}" if found else ""


def left_open_lines(found: list[dict[str, Any]]) -> str:
    lines = [
        f"  {x['item']}: the command of {x['agent']} ended{_status(x['message'])} without "
        f"completing it ({when(x['at'])})"
        for x in found
    ]
    return "\n".join(["", "back to open (dispatched, not completed):", *lines]) if lines else ""
