"""What ``tenure queue`` says about dispatched items that went back to open: the supervisor of
``tenure dispatch`` releases the claim of an item whose command ended without completing it
with reason ``command_exited`` and the command's exit status, which the server records on the
``released_item`` event; the queue finds those events of the principal's agents among the
latest ones and names the items still open."""

from __future__ import annotations

from typing import Any

from tenure.cli import eventlog
from tenure.cli.context import Cli
from tenure.core.models import Event
from tenure.core.text import when
from tenure.core.work import COMMAND_EXITED
from tenure.errors import TenureError
from tenure.verbs.ops import Filters

LOOK_BACK = 5000  # event ids
SHOWN = 5  # items at most


def left_open(run: Cli, principal: str | None) -> list[dict[str, Any]]:
    """The items the agents of ``principal`` (default: you) left open lately, newest first:
    ``{"item", "agent", "at", "exit_status", "message"}``."""
    try:
        me = principal or run.client.me().name
        releases = Filters(type="released_item")
        found, _ = eventlog.latest(run.client, 100, releases, within=LOOK_BACK)
    except TenureError:  # only a note under the queue: never worse than the queue itself
        return []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for event in reversed(found):
        item = str(event.data.get("item") or "")
        if item in seen or not _left_by_agent(event, me):
            continue
        seen.add(item)
        if _still_open(run, item):
            status = event.data.get("exit_status")
            message = f"the command ended with status {status} without completing the item"
            out.append(
                {"item": item, "agent": event.actor, "at": event.at, "exit_status": status,
                 "message": message}
            )  # fmt: skip
        if len(out) == SHOWN:
            break
    return out


def _left_by_agent(event: Event, me: str) -> bool:
    return event.reason == COMMAND_EXITED and (event.actor or "").startswith(me + "/")


def _still_open(run: Cli, item: str) -> bool:
    try:
        view = run.client.items.get(item)
    except TenureError:
        return False
    return view.item.status == "open" and not view.item.assignee


def left_open_lines(found: list[dict[str, Any]]) -> str:
    lines = [
        f"  {x['item']}: the command of {x['agent']} ended with status {x['exit_status']} "
        f"without completing it ({when(x['at'])})"
        for x in found
    ]
    return "\n".join(["", "back to open (dispatched, not completed):", *lines]) if lines else ""
