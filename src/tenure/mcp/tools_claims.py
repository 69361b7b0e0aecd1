"""The item tools of an agent at work: claim, renew, extend, release, progress, complete and
reassign (the same verbs as the REST API's item routes)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from tenure.mcp import inputs as a
from tenure.mcp import models as m
from tenure.mcp.backend import given
from tenure.mcp.tooling import ENDS, ENDS_ONCE, SAFE_AGAIN, WRITE, Resolver, act, tool
from tenure.service.queue_items import MAX_FOLLOW_UPS
from tenure.verbs import fields as wire


def add_claim_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    @tool(server, WRITE)
    async def claim(
        ctx: Context,
        item_id: a.ItemId,
        ttl_ms: a.TtlMs = None,
        task: a.Task = None,
        takeover: Annotated[
            bool,
            Field(
                description="take over an item assigned to someone else whose lease lapsed "
                "(or whose live claim stalled): needs reason; only when you know they stopped. "
                "Never for a revoked item (force-released by an authority): ask or wait for a "
                "reassign instead"
            ),
        ] = False,
        reason: Annotated[
            a.Reason | None,
            Field(
                description="why you take it over; required with takeover=true (recorded with "
                "your name on the item's transfers)"
            ),
        ] = None,
    ) -> m.ClaimOut:
        """Claim an item before you work on it: it becomes yours (assignee) under a lease held by
        this connection's session that lasts ttl_ms (default 30 s) and is renewed by each of
        your calls to a tool that is not read-only (or heartbeat). Keep the returned `epoch`:
        progress and complete must send it. Claiming an item this session holds already renews
        it and keeps its epoch.

        Errors: lease_held means someone else is working on it right now, possibly another
        session under your own name (the error names the holder, its session and when their
        lease expires): do not wait on a held item: pick another (tool ready); come back later
        only if nothing else is ready.
        assigned_to_other means it belongs to someone whose lease lapsed: pick another item;
        only with a real reason (they are gone) claim again with takeover=true and a reason
        (a takeover without a reason is invalid_request). assigned_to_other with lease_state
        revoked means an authority force-released the claim and stopped the work on purpose,
        even if it is assigned to you: do not claim it again and do not take it over; ask
        whoever stopped it, or wait until it is reassigned (then you claim it plainly)."""
        asked = given(ttl_ms=ttl_ms, task=task, takeover=takeover, reason=reason)
        return await act(
            ctx, resolve, lambda b: m.ClaimOut.of(b.claim(item_id, asked)), item=item_id
        )

    @tool(server, SAFE_AGAIN)
    async def renew(
        ctx: Context,
        item_id: a.ItemId,
        epoch: a.OwnEpoch = None,
        ttl_ms: a.TtlMs = None,
    ) -> m.LeaseReplyOut:
        """Renew your claim's lease on an item for another ttl. Rarely needed: every tool call
        but a read-only one renews this session's leases. lease_lost means the claim is gone
        (the error says how; after your own complete: the item is done, nothing is left)."""
        return await act(
            ctx,
            resolve,
            lambda b: m.LeaseReplyOut.of(b.renew(item_id, given(epoch=epoch, ttl_ms=ttl_ms))),
            item=item_id,
        )

    @tool(server, SAFE_AGAIN)
    async def extend(
        ctx: Context,
        item_id: a.ItemId,
        by_ms: Annotated[
            wire.Millis | None, Field(description="the new deadline: now + by_ms")
        ] = None,
        until: Annotated[
            wire.Instant | None, Field(description="the new deadline, epoch milliseconds (UTC)")
        ] = None,
        epoch: a.OwnEpoch = None,
    ) -> m.ExtendOut:
        """Push your claim's deadline further out (give by_ms or until) before a long stretch
        without tool calls, e.g. a long build. Capped at the deployment's maximum (capped=true
        says so); it never shortens a lease."""
        return await act(
            ctx,
            resolve,
            lambda b: m.ExtendOut.of(
                b.extend(item_id, given(until=until, by_ms=by_ms, epoch=epoch))
            ),
            item=item_id,
        )

    @tool(server, ENDS)
    async def release(
        ctx: Context,
        item_id: a.ItemId,
        epoch: Annotated[
            wire.Epoch | None,
            Field(
                description="your claim's epoch: only that claim ends (an epoch that is no "
                "longer the item's releases nothing); default: this session's own claim"
            ),
        ] = None,
    ) -> m.ItemReleaseOut:
        """Give an item up without finishing it: your claim ends, it is no longer assigned to
        you and it reopens for others. Send the epoch your claim returned. Idempotent:
        released=false when you held no claim, or when the epoch is no longer the item's
        (someone took it since: nothing changes). not_holder means another session holds it."""
        return await act(
            ctx,
            resolve,
            lambda b: m.ItemReleaseOut.of(b.release(item_id, given(epoch=epoch))),
            item=item_id,
        )

    @tool(server, WRITE)
    async def progress(
        ctx: Context,
        item_id: a.ItemId,
        epoch: a.Epoch,
        message: a.Message,
        percent: Annotated[
            int | None, Field(description="0 to 100", ge=0, le=100), wire.Whole
        ] = None,
        data: Annotated[
            dict[str, Any] | None, Field(description="small JSON details, at most max_meta_bytes")
        ] = None,
    ) -> m.ItemReplyOut:
        """Report progress on an item you claimed, with your claim's epoch. stale_token means
        someone took the item over since your claim: stop working on it."""
        extra = given(percent=percent, data=data)
        return await act(
            ctx,
            resolve,
            lambda b: m.ItemReplyOut.of(b.progress(item_id, epoch, message, extra)),
            item=item_id,
        )

    @tool(server, SAFE_AGAIN)
    async def complete(
        ctx: Context,
        item_id: a.ItemId,
        epoch: a.Epoch,
        result: Annotated[
            Any,
            Field(
                description="the outcome, any JSON (a summary, links)",
                json_schema_extra=m.JSON_VALUE,
            ),
        ] = None,
        op_id: Annotated[
            wire.OpId | None, Field(description="an id of this completion; repeating it is safe")
        ] = None,
        follow_ups: Annotated[
            list[m.FollowUpIn] | None,
            Field(
                max_length=MAX_FOLLOW_UPS,
                description="items to create under this one with the completion (the work "
                "it leaves to do): each {title, body?, priority?, labels?, id?}",
            ),
        ] = None,
    ) -> m.CompletionOut:
        """Finish an item you claimed, with your claim's epoch: it becomes done and your claim
        ends. Accepted only with the current epoch (stale_token otherwise: someone else has the
        item now and your result is not recorded). follow_ups are created (open, unassigned,
        parent = this item) in the same step as the completion: all or none, once per op_id;
        the reply lists them (follow_ups, with their ids)."""
        more = None if follow_ups is None else [f.fields() for f in follow_ups]
        fields = given(result=result, op_id=op_id, follow_ups=more)
        return await act(
            ctx,
            resolve,
            lambda b: m.CompletionOut.of(b.complete(item_id, epoch, fields)),
            item=item_id,
        )

    @tool(server, ENDS_ONCE)
    async def reassign(
        ctx: Context,
        item_id: a.ItemId,
        to: Annotated[
            a.Principal, Field(description="the principal to give it to, e.g. jo/agent-2")
        ],
        reason: a.Reason,
    ) -> m.ItemReplyOut:
        """Give an item to another principal as an authority over it (an admin, a supervisor,
        or an ancestor of its assignee, e.g. the principal that dispatched the agent): any
        live claim on it ends at once (its epoch is dead: its holder's progress and complete
        are refused), and `to` becomes the assignee and claims it plainly, without takeover.
        This is how revoked work goes on. Give a reason: it is recorded as a reassigned
        transfer. forbidden means you are not such an authority, not_found names an unknown
        item or principal, conflict means the item is done or cancelled."""
        return await act(
            ctx, resolve, lambda b: m.ItemReplyOut.of(b.reassign(item_id, to, reason)), item=item_id
        )
