"""The MCP tools (SPEC §7): the same verbs as the REST API, for agents.

Each tool is a thin call into the :class:`~tenure.mcp.backend.Backend` of the caller
(:func:`tenure.mcp.tooling.act`). Each MCP connection is a session of its principal (the
backend's ``session``). Every tool that is not read-only renews the live leases of the caller's
session (``renew_all``) before its verb runs, so a working agent never lapses and a dead one
lapses on its own, even beside a live sibling under the same principal; a read-only tool changes
nothing. The arguments are strict (:mod:`tenure.mcp.server`); refusals come back as tool errors
(:mod:`tenure.mcp.failures`). This module holds the instructions, :func:`build_server` and the
tools that look at the queue; :mod:`.tools_claims`, :mod:`.tools_locks` and :mod:`.tools_queue`
hold the others.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from tenure.core.policy import PolicySet
from tenure.core.version import __version__
from tenure.mcp import inputs as a
from tenure.mcp import models as m
from tenure.mcp import summaries as sm
from tenure.mcp.backend import Backend, given
from tenure.mcp.server import Bounds, TenureServer
from tenure.mcp.tooling import (
    READ,
    WRITE,
    Resolver,
    act,
    tool,
)
from tenure.mcp.tools_claims import add_claim_tools
from tenure.mcp.tools_locks import add_lock_tools
from tenure.mcp.tools_queue import add_queue_tools

__all__ = ["INSTRUCTIONS", "build_server"]

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
4. If `claim` fails with lease_held or assigned_to_other, someone else has it: do not wait on a
   held item, pick another; come back later only if nothing else is ready. Never take work over
   without a reason.
5. A claim of yours that lapsed (lease_state lapsed) you may claim again to go on. A claim that
   was revoked (lease_state revoked: an authority force-released it) you must NOT claim again,
   not even with takeover: the work was stopped on purpose. Ask whoever stopped it, or wait
   until it is reassigned. `briefing` and `queue` say what to do about each in `advice`.

This connection is your session: the claims and locks you take are held by it. Another
connection under the same identity (another agent, or another copy of you) is another session:
claiming what this one holds is refused to it as to a stranger (lease_held), and its tool calls
do not keep this session's claims alive, nor yours its.
Leases last 30 s by default (ttl_ms). Every call to a tool that changes something (any tool not
marked read-only) renews the live leases of this session first; the read-only tools (whoami,
ready, queue, show_item, list_leases, list_items) change nothing, not even that. So call
`heartbeat` or any write tool to keep your claims: during long stretches of reading or work,
call `heartbeat`. If you stop, your claims lapse on their own and others may take the work over.
Arguments are checked against each tool's input schema: an unknown argument, a wrong type or a
value past a limit is refused (invalid_request, naming the field) and nothing is done.
Instants are epoch milliseconds, UTC; each lease also says `expires_in_ms`.
"""


def build_server(
    resolve: Resolver, policy: PolicySet | None = None, bounds: Bounds | None = None
) -> TenureServer:
    """The MCP server whose tools act through ``resolve(ctx)``: the backend of the caller.
    ``policy`` (the deployment's) bounds ``ttl_ms`` and keys in the input schemas, or
    ``bounds``, a server's (:func:`tenure.mcp.server.openapi_bounds`); without either the
    service checks them."""
    server = TenureServer(
        "tenure",
        title="tenure: leases and a claimable work queue",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",  # the SDK configures the root logger: leave the server's alone
        policy=policy,
        bounds=bounds,
    )
    add_view_tools(server, resolve)
    add_claim_tools(server, resolve)
    add_lock_tools(server, resolve)
    add_queue_tools(server, resolve)
    return server


def add_view_tools(server: MCPServer[Any], resolve: Resolver) -> None:
    @tool(server, READ)
    async def whoami(ctx: Context) -> m.WhoamiOut:
        """Who you are to tenure: your principal name, kind, roles and parent, and the session
        of this connection. Leases and claims you take are held in this name and session."""
        return await act(ctx, resolve, lambda b: m.WhoamiOut.of_session(b.me(), b.session))

    @tool(server, WRITE)
    async def briefing(
        ctx: Context,
        ready: Annotated[a.Limit, Field(description="how many ready items to list")] = 5,
    ) -> sm.BriefingOut:
        """Start here. What you carry (live claims of yours and of your agents), what is no
        longer live (`lapsed`: lease_state lapsed means the lease ran out: claim it again to go
        on if it is yours; lease_state revoked means an authority force-released it: do NOT
        claim it again, not even with takeover; ask whoever stopped it or wait until it is
        reassigned), what stalled (live claims of yours and your agents' with no progress for
        a while: report progress, or check on the agent), what happened to your work since
        your last briefing (taken over, force-released, reassigned, expired, stalled,
        completed, cancelled), the top of the ready queue (`ready`, then `ready_lapsed`: others'
        claims that lapsed, to take over with a reason), and `advice`: one line per lapsed,
        revoked or stalled item saying what to do. A supervisor also sees the lapsed and
        stalled claims of those it supervises. Each event is shown once. Items are summaries:
        show_item has the body."""
        return await act(
            ctx, resolve, lambda b: sm.BriefingOut.of(b.briefing(ready), b.ready(ready))
        )

    @tool(server, READ)
    async def ready(
        ctx: Context,
        limit: Annotated[a.Limit, Field(description="at most this many")] = 20,
    ) -> sm.ReadyOut:
        """Items nobody has: open, unassigned, unleased, most urgent (priority 0) first. Pick
        one and claim it before working on it. Then `lapsed`: work whose holder stopped (its
        claim lapsed), with the holder and since when; take one over with claim
        takeover=true and a reason. Items are summaries: show_item has the body."""
        return await act(ctx, resolve, lambda b: sm.ReadyOut.of(b.ready(limit), b.me().name))

    @tool(server, READ)
    async def queue(
        ctx: Context,
        principal: Annotated[
            a.Principal | None, Field(description="whose queue (default: yours, with your agents')")
        ] = None,
    ) -> sm.QueueOut:
        """Items assigned to you (or to `principal`) and to the agents dispatched by them, each
        with its lease state: live, stalled (live, no progress for a while), lapsed (the
        claim's lease ran out: its assignee claims it again to go on), revoked (an authority
        force-released the claim: nobody claims it again, not even its assignee; ask whoever
        stopped it or wait until it is reassigned) or none; `advice` says what to do about
        each lapsed, revoked or stalled one."""
        return await act(ctx, resolve, lambda b: sm.QueueOut.of(b.queue(principal)))

    @tool(server, READ)
    async def show_item(ctx: Context, item_id: a.ItemId) -> m.ItemViewOut:
        """One item: its fields, its lease (holder, task, expiry), the lease's state (live,
        stalled, lapsed, revoked or none) and its ownership transfers (who took, released,
        force-released or reassigned it, and why). Look here before claiming, or after a
        stale_token to see who has the item now."""
        return await act(ctx, resolve, lambda b: m.ItemViewOut.of(b.show_item(item_id)))

    @tool(server, WRITE)
    async def create_item(
        ctx: Context,
        title: a.Title,
        body: a.Body = None,
        priority: a.Priority = None,
        labels: a.Labels = None,
        parent: Annotated[a.ItemId | None, Field(description="the id of a parent item")] = None,
        id: Annotated[
            a.ItemId | None, Field(description="an id of your choice (default it-…)")
        ] = None,
        parent_epoch: Annotated[
            a.Epoch | None,
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
            fields = given(body=body, priority=priority, labels=labels, parent=parent, id=id)
            made = b.create_item(title, {**fields, **given(parent_epoch=parent_epoch)})
            return m.ItemReplyOut.of(made)

        return await act(ctx, resolve, verb)
