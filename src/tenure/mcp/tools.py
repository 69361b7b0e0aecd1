"""The MCP tools (SPEC §7): the same verbs as the REST API, for agents.

Each tool is a thin call into the :class:`~tenure.mcp.backend.Backend` of the caller, run in a
worker thread (the service and the client block). Each MCP connection is a session of its
principal (the backend's ``session``). Every tool call is a heartbeat first: the live leases of
the caller's session are renewed (``renew_all``) before the verb runs, so a working agent never
lapses and a dead one lapses on its own, even beside a live sibling under the same principal.
Refusals come back as tool errors (:mod:`tenure.mcp.failures`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from tenure import __version__
from tenure.core.items import ITEM_PREFIX
from tenure.errors import InvalidRequest
from tenure.mcp import models as m
from tenure.mcp.backend import Backend
from tenure.mcp.failures import reported

T = TypeVar("T")
Resolver = Callable[[Context], Backend]

INSTRUCTIONS = """\
tenure coordinates work between agents and people through leases: time-bounded, named grants
that stay alive only while their holder is active.

How to work:
1. Call `briefing` first: what you carry, what lapsed, what happened to your work, and what is
   ready to take.
2. Pick an item from `ready` (or `briefing.ready`) and `claim` it BEFORE you start working on it.
   The claim returns an `epoch`: keep it.
3. Report with `progress` and finish with `complete`, both with that `epoch`. If you give up,
   `release` the item (with that `epoch`) so somebody else can take it.
4. If `claim` fails with lease_held or assigned_to_other, someone else has it: pick another item.
   Never take work over without a reason.
5. A claim of yours that lapsed (lease_state lapsed) you may claim again to go on. A claim that
   was revoked (lease_state revoked: an authority force-released it) you must NOT claim again,
   not even with takeover: the work was stopped on purpose. Ask whoever stopped it, or wait
   until it is reassigned. `briefing` and `queue` say what to do about each in `advice`.

This connection is your session: the claims and locks you take are held by it. Another
connection under the same identity (another agent, or another copy of you) is another session:
claiming what this one holds is refused to it as to a stranger (lease_held), and its tool calls
do not keep this session's claims alive, nor yours its.
Leases last 30 s by default (ttl_ms). Every call you make to any tool here renews the live leases
of this session, so while you keep calling tools you keep your claims; call `heartbeat` during
long stretches without other calls. If you stop, your claims lapse on their own and others may
take the work over. Instants are epoch milliseconds, UTC.
"""

ItemId = Annotated[str, Field(description="the item's id, e.g. it-1f2e3d4c5b")]
Key = Annotated[str, Field(description="the lease's key, a string such as jobs/nightly-report")]
Epoch = Annotated[
    int, Field(description="the epoch your claim returned (claim.epoch, lease.token)")
]
TtlMs = Annotated[
    int | None,
    Field(description="lease term in milliseconds (default 30000: the deployment's default)"),
]
Task = Annotated[
    str | None, Field(description="what you are doing it for: a run id, a job or a session")
]
Reason = Annotated[str, Field(description="why, recorded with your name for everyone to see")]
MAX_HEARTBEAT_KEYS = 1000  # as POST /v1/leases/renew-all

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
SAFE_AGAIN = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
ENDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
ENDS_ONCE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def item_of(key: str) -> str | None:
    """The item whose claim ``key`` is (``items/<id>``), else ``None``: item keys go to the item
    verbs, as the lease verbs refuse them."""
    return key[len(ITEM_PREFIX) :] if key.startswith(ITEM_PREFIX) and key != ITEM_PREFIX else None


async def act(
    ctx: Context, resolve: Resolver, verb: Callable[[Backend], T], beat: bool = True
) -> T:
    """Run ``verb`` on the caller's backend in a worker thread, after a heartbeat."""
    backend = resolve(ctx)

    def run() -> T:
        if beat:
            backend.heartbeat()
        return verb(backend)

    return await anyio.to_thread.run_sync(run)


def build_server(resolve: Resolver) -> MCPServer[Any]:
    """The MCP server whose tools act through ``resolve(ctx)``: the backend of the caller."""
    server: MCPServer[Any] = MCPServer(
        "tenure",
        title="tenure: leases and a claimable work queue",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",  # the SDK configures the root logger: leave the server's alone
    )
    add_view_tools(server, resolve)
    add_claim_tools(server, resolve)
    add_lock_tools(server, resolve)
    return server


def add_view_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    @server.tool(annotations=READ)
    @reported
    async def whoami(ctx: Context) -> m.WhoamiOut:
        """Who you are to tenure: your principal name, kind, roles and parent, and the session
        of this connection. Leases and claims you take are held in this name and session."""
        return await act(ctx, resolve, lambda b: m.WhoamiOut.of_session(b.me(), b.session))

    @server.tool(annotations=WRITE)
    @reported
    async def briefing(
        ctx: Context,
        ready: Annotated[int, Field(description="how many ready items to list", ge=1)] = 5,
    ) -> m.BriefingOut:
        """Start here. What you carry (live claims of yours and of your agents), what is no
        longer live (`lapsed`: lease_state lapsed means the lease ran out: claim it again to go
        on if it is yours; lease_state revoked means an authority force-released it: do NOT
        claim it again, not even with takeover; ask whoever stopped it or wait until it is
        reassigned), what stalled (live claims of yours and your agents' with no progress for
        a while: report progress, or check on the agent), what happened to your work since
        your last briefing (taken over, force-released, reassigned, expired, stalled,
        completed, cancelled), the top of the ready queue, and `advice`: one line per lapsed,
        revoked or stalled item saying what to do. Each event is shown once."""
        return await act(ctx, resolve, lambda b: m.BriefingOut.of(b.briefing(ready)))

    @server.tool(annotations=READ)
    @reported
    async def ready(
        ctx: Context,
        limit: Annotated[int, Field(description="at most this many", ge=1)] = 20,
    ) -> m.ItemsOut:
        """Items nobody has: open, unassigned, unleased, most urgent (priority 0) first. Pick
        one and claim it before working on it."""
        return await act(ctx, resolve, lambda b: m.ItemsOut.of(b.ready(limit)))

    @server.tool(annotations=READ)
    @reported
    async def queue(
        ctx: Context,
        principal: Annotated[
            str | None, Field(description="whose queue (default: yours, with your agents')")
        ] = None,
    ) -> m.QueueOut:
        """Items assigned to you (or to `principal`) and to the agents dispatched by them, each
        with its lease state: live, stalled (live, no progress for a while), lapsed (the
        claim's lease ran out: its assignee claims it again to go on), revoked (an authority
        force-released the claim: nobody claims it again, not even its assignee; ask whoever
        stopped it or wait until it is reassigned) or none; `advice` says what to do about
        each lapsed, revoked or stalled one."""
        return await act(ctx, resolve, lambda b: m.QueueOut.of(b.queue(principal)))

    @server.tool(annotations=READ)
    @reported
    async def show_item(ctx: Context, item_id: ItemId) -> m.ItemViewOut:
        """One item: its fields, its lease (holder, task, expiry), the lease's state (live,
        stalled, lapsed, revoked or none) and its ownership transfers (who took, released,
        force-released or reassigned it, and why). Look here before claiming, or after a
        stale_token to see who has the item now."""
        return await act(ctx, resolve, lambda b: m.ItemViewOut.of(b.show_item(item_id)))

    @server.tool(annotations=WRITE)
    @reported
    async def create_item(
        ctx: Context,
        title: Annotated[str, Field(description="one line saying what is to be done")],
        body: Annotated[str | None, Field(description="details, in Markdown")] = None,
        priority: Annotated[int | None, Field(description="0 most urgent; default 2")] = None,
        labels: Annotated[list[str] | None, Field(description="labels to filter by")] = None,
        parent: Annotated[str | None, Field(description="the id of a parent item")] = None,
        id: Annotated[str | None, Field(description="an id of your choice (default it-…)")] = None,
        parent_epoch: Annotated[
            int | None,
            Field(
                description="your claim's epoch on the parent: the item is created only while "
                "you still hold that claim (stale_token otherwise); needs parent"
            ),
        ] = None,
    ) -> m.ItemReplyOut:
        """Add a work item to the shared queue (open, unassigned). Creating does not claim it:
        claim it if you mean to do it yourself. To split work you are doing into sub-items,
        give parent and your claim's parent_epoch: if someone took the parent over since,
        nothing is created (stale_token), so a superseded worker never fans out work."""

        def verb(b: Backend) -> m.ItemReplyOut:
            made = b.create_item(title, body, priority, labels, parent, id, parent_epoch)
            return m.ItemReplyOut.of(made)

        return await act(ctx, resolve, verb)


def add_claim_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    @server.tool(annotations=WRITE)
    @reported
    async def claim(
        ctx: Context,
        item_id: ItemId,
        ttl_ms: TtlMs = None,
        task: Task = None,
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
            str | None,
            Field(
                description="why you take it over; required with takeover=true (recorded with "
                "your name on the item's transfers)"
            ),
        ] = None,
    ) -> m.ClaimOut:
        """Claim an item before you work on it: it becomes yours (assignee) under a lease held by
        this connection's session that lasts ttl_ms (default 30 s) and is renewed by each of
        your tool calls. Keep the returned `epoch`: progress and complete must send it. Claiming
        an item this session holds already renews it and keeps its epoch.

        Errors: lease_held means someone else is working on it right now, possibly another
        session under your own name (the error names the holder, its session and when their
        lease expires): pick another item, do not wait on it.
        assigned_to_other means it belongs to someone whose lease lapsed: pick another item;
        only with a real reason (they are gone) claim again with takeover=true and a reason
        (a takeover without a reason is invalid_request). assigned_to_other with lease_state
        revoked means an authority force-released the claim and stopped the work on purpose,
        even if it is assigned to you: do not claim it again and do not take it over; ask
        whoever stopped it, or wait until it is reassigned (then you claim it plainly)."""
        return await act(
            ctx,
            resolve,
            lambda b: m.ClaimOut.of(b.claim(item_id, ttl_ms, task, takeover, reason)),
        )

    @server.tool(annotations=SAFE_AGAIN)
    @reported
    async def renew(
        ctx: Context,
        item_id: ItemId,
        epoch: Annotated[
            int | None, Field(description="your claim's epoch (default: the item's)")
        ] = None,
        ttl_ms: TtlMs = None,
    ) -> m.LeaseReplyOut:
        """Renew your claim's lease on an item for another ttl. Rarely needed: every tool call
        renews this session's leases. lease_lost means the claim is gone (the error says how)."""
        return await act(
            ctx, resolve, lambda b: m.LeaseReplyOut.of(b.renew(item_id, epoch, ttl_ms))
        )

    @server.tool(annotations=SAFE_AGAIN)
    @reported
    async def extend(
        ctx: Context,
        item_id: ItemId,
        by_ms: Annotated[int | None, Field(description="the new deadline: now + by_ms")] = None,
        until: Annotated[
            int | None, Field(description="the new deadline, epoch milliseconds (UTC)")
        ] = None,
        epoch: Annotated[
            int | None, Field(description="your claim's epoch (default: the item's)")
        ] = None,
    ) -> m.ExtendOut:
        """Push your claim's deadline further out (give by_ms or until) before a long stretch
        without tool calls, e.g. a long build. Capped at the deployment's maximum (capped=true
        says so); it never shortens a lease."""
        return await act(
            ctx, resolve, lambda b: m.ExtendOut.of(b.extend(item_id, until, by_ms, epoch))
        )

    @server.tool(annotations=ENDS)
    @reported
    async def release(
        ctx: Context,
        item_id: ItemId,
        epoch: Annotated[
            int | None,
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
        return await act(ctx, resolve, lambda b: m.ItemReleaseOut.of(b.release(item_id, epoch)))

    @server.tool(annotations=WRITE)
    @reported
    async def progress(
        ctx: Context,
        item_id: ItemId,
        epoch: Epoch,
        message: Annotated[str, Field(description="what you did or are doing, one line")],
        percent: Annotated[int | None, Field(description="0 to 100", ge=0, le=100)] = None,
        data: Annotated[dict[str, Any] | None, Field(description="small JSON details")] = None,
    ) -> m.ItemReplyOut:
        """Report progress on an item you claimed, with your claim's epoch. stale_token means
        someone took the item over since your claim: stop working on it."""
        return await act(
            ctx,
            resolve,
            lambda b: m.ItemReplyOut.of(b.progress(item_id, epoch, message, percent, data)),
        )

    @server.tool(annotations=SAFE_AGAIN)
    @reported
    async def complete(
        ctx: Context,
        item_id: ItemId,
        epoch: Epoch,
        result: Annotated[
            Any,
            Field(
                description="the outcome, any JSON (a summary, links)",
                json_schema_extra=m.JSON_VALUE,
            ),
        ] = None,
        op_id: Annotated[
            str | None, Field(description="an id of this completion; repeating it is safe")
        ] = None,
        follow_ups: Annotated[
            list[m.FollowUpIn] | None,
            Field(
                description="items to create under this one with the completion (the work "
                "it leaves to do): each {title, body?, priority?, labels?, id?}"
            ),
        ] = None,
    ) -> m.CompletionOut:
        """Finish an item you claimed, with your claim's epoch: it becomes done and your claim
        ends. Accepted only with the current epoch (stale_token otherwise: someone else has the
        item now and your result is not recorded). follow_ups are created (open, unassigned,
        parent = this item) in the same step as the completion: all or none, once per op_id;
        the reply lists them (follow_ups, with their ids)."""
        fields = None if follow_ups is None else [f.fields() for f in follow_ups]
        return await act(
            ctx,
            resolve,
            lambda b: m.CompletionOut.of(b.complete(item_id, epoch, result, op_id, fields)),
        )

    @server.tool(annotations=ENDS_ONCE)
    @reported
    async def reassign(
        ctx: Context,
        item_id: ItemId,
        to: Annotated[str, Field(description="the principal to give it to, e.g. jo/agent-2")],
        reason: Reason,
    ) -> m.ItemReplyOut:
        """Give an item to another principal as an authority over it (an admin, a supervisor,
        or an ancestor of its assignee, e.g. the principal that dispatched the agent): any
        live claim on it ends at once (its epoch is dead: its holder's progress and complete
        are refused), and `to` becomes the assignee and claims it plainly, without takeover.
        This is how revoked work goes on. Give a reason: it is recorded as a reassigned
        transfer. forbidden means you are not such an authority, not_found names an unknown
        item or principal, conflict means the item is done or cancelled."""
        return await act(ctx, resolve, lambda b: m.ItemReplyOut.of(b.reassign(item_id, to, reason)))


def add_lock_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    @server.tool(annotations=WRITE)
    @reported
    async def acquire_lock(
        ctx: Context,
        key: Key,
        ttl_ms: TtlMs = None,
        task: Task = None,
        meta: Annotated[dict[str, Any] | None, Field(description="small JSON to show")] = None,
    ) -> m.LeaseReplyOut:
        """Take a lease (a lock) on any key, e.g. a file, a branch or a deploy target, before
        touching what it guards. Held by this connection's session; lasts ttl_ms (default 30 s)
        and is renewed by each of your tool calls. lease.token is the fencing token. Acquiring
        a key this session holds renews it (same token). lease_held means someone else (or
        another session of yours) holds it: work on something else or try again after the
        expiry the error names."""
        return await act(
            ctx, resolve, lambda b: m.LeaseReplyOut.of(b.acquire_lock(key, ttl_ms, task, meta))
        )

    @server.tool(annotations=SAFE_AGAIN)
    @reported
    async def renew_lock(
        ctx: Context,
        key: Key,
        token: Annotated[int, Field(description="the lease's token from acquire_lock")],
        ttl_ms: TtlMs = None,
    ) -> m.LeaseReplyOut:
        """Renew your lease on a key for another ttl. Rarely needed: every tool call renews this
        session's leases. lease_lost means it is gone (the error says how)."""
        return await act(
            ctx, resolve, lambda b: m.LeaseReplyOut.of(b.renew_lock(key, token, ttl_ms))
        )

    @server.tool(annotations=ENDS)
    @reported
    async def release_lock(
        ctx: Context,
        key: Key,
        token: Annotated[
            int | None,
            Field(
                description="end only this lease (its token from acquire_lock); default: this "
                "session's lease"
            ),
        ] = None,
    ) -> m.ReleaseOut:
        """Release your lease on a key as soon as you are done with it. Idempotent:
        released=false when you did not hold it. not_holder means someone else (or another
        session of yours) holds it."""
        return await act(ctx, resolve, lambda b: m.ReleaseOut.of(b.release_lock(key, token)))

    @server.tool(annotations=READ)
    @reported
    async def list_leases(
        ctx: Context,
        prefix: Annotated[str | None, Field(description="keys starting with this")] = None,
        holder: Annotated[str | None, Field(description="held by this principal")] = None,
        task: Annotated[str | None, Field(description="serving this task")] = None,
    ) -> m.LeasesOut:
        """The live leases (locks and item claims; an item's key is items/<id>), by key, with
        holder, task and expiry."""
        return await act(
            ctx, resolve, lambda b: m.LeasesOut.of(b.list_leases(prefix, holder, task))
        )

    @server.tool(annotations=ENDS)
    @reported
    async def force_release(
        ctx: Context,
        reason: Reason,
        item_id: Annotated[str | None, Field(description="the item whose claim to end")] = None,
        key: Annotated[str | None, Field(description="the key whose lease to end")] = None,
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

        return await act(ctx, resolve, verb)

    @server.tool(annotations=SAFE_AGAIN)
    @reported
    async def heartbeat(
        ctx: Context,
        keys: Annotated[
            list[str] | None,
            Field(
                description=f"only these keys, at most {MAX_HEARTBEAT_KEYS} (default: all "
                "leases of this session)"
            ),
        ] = None,
    ) -> m.HeartbeatOut:
        """Renew the live leases and claims of this session (this connection) now, each for its
        own ttl, and learn which were lost (with why). Any other tool call does this too; call
        it during long stretches without other calls. Leases another session holds, under your
        name or not, are neither renewed nor listed (not_held when you name them)."""
        if keys is not None and len(keys) > MAX_HEARTBEAT_KEYS:
            raise InvalidRequest(f"keys: at most {MAX_HEARTBEAT_KEYS} keys", field="keys")
        return await act(ctx, resolve, lambda b: m.HeartbeatOut.of(b.heartbeat(keys)), False)
