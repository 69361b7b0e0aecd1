"""The MCP tools that look after the queue itself: ``list_items`` (find items by status, label
or assignee), ``update_item`` (edit title, body, priority, labels, status), ``cancel_item`` and
``reopen_item`` (a parked item).
Thin calls into the caller's :class:`~tenure.mcp.backend.Backend`, like the tools of
:mod:`tenure.mcp.tools`; lists carry item summaries (:mod:`tenure.mcp.summaries`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from tenure.errors import InvalidRequest
from tenure.mcp import inputs as a
from tenure.mcp import summaries as sm
from tenure.mcp.tooling import ENDS_ONCE, READ, SAFE_AGAIN, Resolver, act, tool
from tenure.verbs import fields as wire

Status = Literal["open", "in_progress", "blocked", "done", "cancelled", "parked"]
EDITS = ("title", "body", "priority", "labels", "status")


def add_queue_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    """Register ``list_items``, ``update_item``, ``cancel_item`` and ``reopen_item`` on
    ``server``."""

    @tool(server, READ)
    async def list_items(
        ctx: Context,
        status: Annotated[Status | None, Field(description="only items in this status")] = None,
        label: Annotated[wire.Label | None, Field(description="only items with this label")] = None,
        assignee: Annotated[
            a.Principal | None, Field(description="only items assigned to this principal")
        ] = None,
        limit: Annotated[a.Limit, Field(description="at most this many")] = 50,
    ) -> sm.ItemListOut:
        """Find items by status, label and assignee (all optional, combined with and), most
        urgent first. Summaries only: show_item has an item's body, lease and history."""
        filters = {"status": status, "assignee": assignee, "label": label}
        return await act(ctx, resolve, lambda b: sm.ItemListOut.of(b.list_items(filters, limit)))

    @tool(server, SAFE_AGAIN)
    async def update_item(
        ctx: Context,
        item_id: a.ItemId,
        title: Annotated[a.Title | None, Field(description="a new title")] = None,
        body: Annotated[a.Body, Field(description="a new body, in Markdown")] = None,
        priority: Annotated[a.Priority, Field(description="a new priority: 0 most urgent")] = None,
        labels: Annotated[
            a.Labels, Field(description="the new labels (they replace the old ones)")
        ] = None,
        status: Annotated[
            Literal["open", "blocked"] | None,
            Field(description="blocked (waiting on something) or open again"),
        ] = None,
    ) -> sm.ClaimSummaryOut:
        """Edit an item: give only the fields to change. Only its assignee or an authority
        over the assignee (an admin, a supervisor, an ancestor) edits an assigned item
        (not_holder otherwise, naming the assignee); anyone edits an unassigned one. To take
        an item use claim, to finish it complete, to drop it cancel_item. conflict means the
        item is done or cancelled."""
        given = dict(zip(EDITS, (title, body, priority, labels, status), strict=True))
        changes = {k: v for k, v in given.items() if v is not None}
        if not changes:
            raise InvalidRequest(
                f"{EDITS[0]}: give at least one of {', '.join(EDITS)}", field="title"
            )
        return await act(
            ctx, resolve, lambda b: sm.ClaimSummaryOut.of(b.update_item(item_id, changes))
        )

    @tool(server, ENDS_ONCE)
    async def cancel_item(ctx: Context, item_id: a.ItemId, reason: a.Reason) -> sm.CancelOut:
        """Cancel an item nobody should do any more, with a reason: it becomes cancelled,
        unassigned, and any live claim on it ends (its holder's progress and complete are
        refused). Its assignee (its creator while nobody is assigned) or an authority over
        them (an admin, a supervisor, an ancestor) may; forbidden otherwise. conflict means
        it is done or cancelled already. To give work up without cancelling it, release it."""
        return await act(ctx, resolve, lambda b: sm.CancelOut.of(b.cancel_item(item_id, reason)))

    @tool(server, ENDS_ONCE)
    async def reopen_item(ctx: Context, item_id: a.ItemId, reason: a.Reason) -> sm.ReopenOut:
        """Reopen a parked item (its claims failed the policy's max_attempts times: lapsed,
        or its command exited non-zero), with a reason saying what was fixed: it becomes open
        and unassigned, its attempts reset, and anyone may claim it again. Its assignee, its
        creator or an authority over them (an admin, a supervisor, an ancestor) may;
        forbidden otherwise. conflict means it is not parked. Reopen only once the cause of
        the failures is dealt with."""
        return await act(ctx, resolve, lambda b: sm.ReopenOut.of(b.reopen_item(item_id, reason)))
