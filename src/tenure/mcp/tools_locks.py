"""The lock tools (leases on any key) and the tools on anyone's leases: acquire_lock, renew_lock,
release_lock, transfer_lock, list_leases, force_release and heartbeat."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from tenure.errors import InvalidRequest
from tenure.mcp import inputs as a
from tenure.mcp import models as m
from tenure.mcp.backend import Backend, given
from tenure.mcp.tooling import (
    ENDS,
    ENDS_ONCE,
    READ,
    SAFE_AGAIN,
    WRITE,
    Resolver,
    act,
    item_of,
    tool,
)
from tenure.verbs import fields as wire


def add_lock_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    @tool(server, WRITE)
    async def acquire_lock(
        ctx: Context,
        key: a.LockKey,
        ttl_ms: a.TtlMs = None,
        task: a.Task = None,
        meta: a.Meta = None,
        scope: a.Scope = None,
        slots: a.Slots = None,
    ) -> m.LeaseReplyOut:
        """Take a lease (a lock) on any key, e.g. a file, a branch or a deploy target, before
        touching what it guards. Held by this connection's session; lasts ttl_ms (default 30 s)
        and is renewed by each of your calls to a tool that is not read-only (or heartbeat).
        lease.token is the fencing token. Acquiring a key this session holds renews it (same
        token). scope 'subtree' on a key ending in '/' locks every key under it too.
        lease_held means someone else (or another session of yours) holds the lock, or a
        subtree above it, or (for a subtree) a key under it: held_key names which. Wait for it
        (it frees at the latest at the expiry the error names, unless renewed) or use another
        key. slots N makes key a semaphore: N holders at once, lease.key is your slot's key
        (renew and release it); when all N are held, lease_held names the holders."""
        fields = given(ttl_ms=ttl_ms, task=task, meta=meta, scope=scope, slots=slots)
        return await act(ctx, resolve, lambda b: m.LeaseReplyOut.of(b.acquire_lock(key, fields)))

    @tool(server, SAFE_AGAIN)
    async def renew_lock(
        ctx: Context,
        key: a.LockKey,
        token: a.Token,
        ttl_ms: a.TtlMs = None,
    ) -> m.LeaseReplyOut:
        """Renew your lease on a key for another ttl. Rarely needed: every tool call but a
        read-only one renews this session's leases. lease_lost means it is gone (the error says
        how)."""
        return await act(
            ctx,
            resolve,
            lambda b: m.LeaseReplyOut.of(b.renew_lock(key, token, given(ttl_ms=ttl_ms))),
        )

    @tool(server, ENDS)
    async def release_lock(
        ctx: Context,
        key: a.LockKey,
        token: Annotated[
            wire.Token | None,
            Field(
                description="end only this lease (its token from acquire_lock); default: this "
                "session's lease"
            ),
        ] = None,
    ) -> m.ReleaseOut:
        """Release your lease on a key as soon as you are done with it. Idempotent:
        released=false when you did not hold it. not_holder means someone else (or another
        session of yours) holds it."""
        return await act(
            ctx, resolve, lambda b: m.ReleaseOut.of(b.release_lock(key, given(token=token)))
        )

    @tool(server, ENDS_ONCE)
    async def transfer_lock(
        ctx: Context,
        key: a.LockKey,
        token: a.Token,
        to_session: Annotated[
            wire.Session,
            Field(description="your other session that holds the lease from now on"),
        ],
    ) -> m.LeaseReplyOut:
        """Hand your lease on a key to another session of yours (e.g. the `tenure run` that
        goes on with the work), without letting go of the key in between. The lease comes
        back with a NEW token: yours is stale from then on (fenced writes with it are
        refused), and this session no longer holds it. conflict means that session holds it
        already, or it is a subtree lease (release it and acquire it from there)."""
        return await act(
            ctx,
            resolve,
            lambda b: m.LeaseReplyOut.of(b.client.transfer(key, token, to_session)),
        )

    @tool(server, READ)
    async def list_leases(
        ctx: Context,
        prefix: Annotated[a.Filter, Field(description="keys starting with this")] = None,
        holder: Annotated[a.Filter, Field(description="held by this principal")] = None,
        task: Annotated[a.Filter, Field(description="serving this task")] = None,
        include_lapsed: Annotated[
            bool,
            Field(
                description="also the claims that lapsed (state expired): work whose holder "
                "stopped, to take over with claim takeover=true and a reason"
            ),
        ] = False,
    ) -> m.LeasesOut:
        """The live leases (locks and item claims; an item's key is items/<id>), by key, with
        holder, task and expiry; with include_lapsed, then the item claims that lapsed."""
        filters = {"prefix": prefix, "holder": holder, "task": task}
        return await act(
            ctx,
            resolve,
            lambda b: m.LeasesOut.of(b.list_leases(filters, include_lapsed)),
        )

    @tool(server, ENDS)
    async def force_release(
        ctx: Context,
        reason: a.Reason,
        item_id: Annotated[
            a.ItemId | None, Field(description="the item whose claim to end")
        ] = None,
        key: Annotated[wire.Key | None, Field(description="the key whose lease to end")] = None,
    ) -> m.ForceReleaseOut:
        """End SOMEONE ELSE's live lease or claim as an authority (an admin, a supervisor, or
        the principal that dispatched the holder): give exactly one of item_id or key (an
        item's key, items/<id>, is that item's claim), and a reason. The holder's token is dead
        from then on, and an item's claim reads revoked: nobody claims it again (not even its
        assignee) until you reassign it (tool reassign) or someone takes it over with a
        reason. Only for a holder that is stuck or gone; a lease that lapses needs nothing.
        forbidden means you are not such an authority."""

        def verb(b: Backend) -> m.ForceReleaseOut:
            if (item_id is None) == (key is None):
                raise InvalidRequest("give exactly one of item_id and key", field="item_id")
            claimed = item_id if key is None else item_of(key)
            if claimed is not None:
                return m.ForceReleaseOut.of(b.force_release_item(claimed, reason))
            assert key is not None
            return m.ForceReleaseOut.of(b.force_release(key, reason))

        return await act(ctx, resolve, verb, item=item_id or item_of(key))

    @tool(server, SAFE_AGAIN)
    async def heartbeat(
        ctx: Context,
        keys: a.HeartbeatKeys = None,
    ) -> m.HeartbeatOut:
        """Renew the live leases and claims of this session (this connection) now, each for its
        own ttl, and learn which were lost (with why). Any tool call that is not read-only does
        this too; call it during long stretches of reading, thinking or work without them.
        Leases another session holds, under your name or not, are neither renewed nor listed
        (not_held when you name them)."""
        return await act(ctx, resolve, lambda b: m.HeartbeatOut.of(b.heartbeat(keys)), False)
