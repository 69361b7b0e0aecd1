"""The item and claim routes of SPEC §4: parse the request, call ``service.items``, render.

Every rule (who may claim, takeover, fencing by epoch, cancel rights, dispatch) lives in
:mod:`tenure.service.queue` and :mod:`tenure.core.items`; a route only moves values between the
wire and
the :class:`~tenure.service.queue.WorkQueue`. A route that ends a claim (release, complete, cancel,
force-release) wakes the long-polls waiting on the item's lease key ``items/<id>``.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Path, Query

from tenure.core.items import item_key
from tenure.core.validate import MAX_LIMIT
from tenure.server.http import item_schemas as i
from tenure.server.http import openapi
from tenure.server.http.deps import Caller, St, text_query
from tenure.server.http.summaries import decode_cursor, items_page, views_page
from tenure.service.queue import Dispatch
from tenure.verbs import fields as f
from tenure.verbs import replies as r

P = openapi.problem_responses
ItemIdParam = Annotated[
    str,
    Path(
        description="the item's id",
        json_schema_extra={"pattern": f.ITEM_ID_PATTERN, "examples": ["it-1f2e3d4c5b"]},
    ),
]
PrincipalParam = Annotated[
    str,
    Path(
        description="a principal's name (URL-encoded: `jo%2Freviewer-1`)",
        json_schema_extra={"minLength": 1, "maxLength": 256, "pattern": f.LINE_PATTERN},
    ),
]
ITEMS: list[str | Enum] = ["items"]
#: a page's end in ``GET /v1/items``: ``priority:created_at:id``
CURSOR_PATTERN = r"^-?[0-9]{1,19}:-?[0-9]{1,19}:[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
VIEWS: list[str | Enum] = ["queue"]


def given(**values: Any) -> dict[str, Any]:
    """The fields the caller sent: ``null`` means absent, as everywhere in the API."""
    return {k: v for k, v in values.items() if v is not None}


def dispatch_out(dispatch: Dispatch) -> dict[str, Any]:
    """The dispatch reply: the agent's whole principal and its token (shown once)."""
    return {**dispatch.to_dict(), "agent": {**dispatch.agent.to_dict(), "token": dispatch.token}}


def add_item_routes(app: FastAPI) -> None:
    add_item_crud_routes(app)
    add_claim_routes(app)
    add_view_routes(app)


def add_item_crud_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/items",
        response_model=i.ItemReply,
        status_code=201,
        tags=ITEMS,
        responses={**P(400, 401, 403, 404, 409, 413, 422), 201: openapi.ITEM_LINKS},
    )
    def create_item(body: i.ItemIn, me: Caller, st: St) -> dict[str, Any]:
        """Add an item to the queue (`open`, unassigned).

        With `parent_epoch`, fenced on the parent like progress: created only while that is
        the parent's current epoch and you hold its claim (`409 stale_token` for an older
        epoch, `403 not_holder` for someone else's), so a superseded owner cannot fan out work.
        """
        fields = given(
            id=body.id,
            body=body.body,
            priority=body.priority,
            labels=body.labels,
            parent=body.parent,
            parent_epoch=body.parent_epoch,
        )
        return {"item": st.service.items.create(me, body.title, **fields).to_dict()}

    @app.get("/v1/items", response_model=i.ItemSummariesReply, tags=ITEMS, responses=P(401, 422))
    def list_items(
        me: Caller,
        st: St,
        status: Annotated[
            Literal["open", "in_progress", "blocked", "done", "cancelled"] | None, Query()
        ] = None,
        assignee: Annotated[str | None, text_query(256, "assigned to")] = None,
        label: Annotated[str | None, text_query(64, "with this label")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
        after: Annotated[
            str | None,
            Query(
                description="the `next` of the previous page: the page after it",
                json_schema_extra={"maxLength": 180, "pattern": CURSOR_PATTERN},
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Items by priority then age, filtered by status, assignee and label, as summaries
        (no `body`, `result` or progress `data`: `GET /v1/items/{id}` has them).

        A reply stops early once its JSON reaches the server's list budget (`truncated:
        true`); `next` is the cursor of the following page whenever there may be one."""
        cursor = decode_cursor(after)
        found = st.service.items.summaries(status, assignee, label, limit, cursor)
        return items_page(found, limit, st.limits.list_bytes)

    @app.get(
        "/v1/items/{id}",
        response_model=i.ItemViewOut,
        tags=ITEMS,
        responses=P(401, 404, 422),
    )
    def get_item(id: ItemIdParam, me: Caller, st: St) -> dict[str, Any]:
        """The item, its lease (while its epoch's lease exists), lease state and transfers."""
        return st.service.items.get(id).to_dict()

    @app.patch(
        "/v1/items/{id}",
        response_model=i.ItemViewOut,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def update_item(id: ItemIdParam, body: i.ItemPatch, me: Caller, st: St) -> dict[str, Any]:
        """Edit an item; `status: in_progress` claims it for you with the rules of `claim`.

        Only its assignee or an authority over the assignee (an admin, a supervisor, an
        ancestor) edits an assigned item: anyone else gets `403 not_holder`, naming the
        assignee, and nothing changes."""
        changes = given(**body.model_dump(exclude_unset=True))
        return st.service.items.update(me, id, **changes).to_dict()


def add_claim_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/items/{id}/claim",
        response_model=i.ClaimReply,
        tags=ITEMS,
        responses={**P(400, 401, 404, 409, 413, 422), 200: openapi.CLAIM_LINKS},
    )
    def claim_item(id: ItemIdParam, body: i.ClaimIn, me: Caller, st: St) -> dict[str, Any]:
        """Claim the item: its lease and the assignee edge; the lease's token is the epoch.

        Re-claiming your own live claim from the same `session` renews it. `409 lease_held`
        while someone else's claim (or another session's of yours) is live and not stalled;
        `409 assigned_to_other` for someone else's lapsed or stalled claim, and for a revoked
        (force-released) one even of yours, unless `takeover` with a `reason`.
        """
        claim = st.service.items.claim(
            me, id, body.ttl_ms, body.task, bool(body.takeover), body.reason, body.session
        )
        return claim.to_dict()

    @app.post(
        "/v1/items/{id}/renew",
        response_model=r.LeaseReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def renew_item(id: ItemIdParam, body: i.ItemRenewIn, me: Caller, st: St) -> dict[str, Any]:
        """Renew your claim's lease (`409 lease_lost` once it is gone)."""
        return {"lease": st.service.items.renew(me, id, body.epoch, body.ttl_ms).to_dict()}

    @app.post(
        "/v1/items/{id}/extend",
        response_model=r.ExtendReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def extend_item(id: ItemIdParam, body: i.ItemExtendIn, me: Caller, st: St) -> dict[str, Any]:
        """Push your claim's deadline (capped at `max_lease` and says so; never shortens)."""
        return st.service.items.extend(me, id, body.until, body.by_ms, body.epoch).to_dict()

    @app.post(
        "/v1/items/{id}/release",
        response_model=i.ItemReleaseReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 413, 422),
    )
    def release_item(id: ItemIdParam, body: i.ItemReleaseIn, me: Caller, st: St) -> dict[str, Any]:
        """End your claim: the lease ends, your assignee edge goes, the item reopens.

        Idempotent: `released: false` when you held no live lease on it. Fenced by `epoch`: an
        epoch that is no longer the item's answers `released: false` and changes nothing.
        """
        result = st.service.items.release(me, id, body.epoch, body.session)
        st.waiters.notify(item_key(id))
        return result.to_dict()

    @app.post(
        "/v1/items/{id}/progress",
        response_model=i.ItemReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def progress_item(id: ItemIdParam, body: i.ProgressIn, me: Caller, st: St) -> dict[str, Any]:
        """Report progress, fenced by the epoch (`409 stale_token` unless it is current); only
        the claim's holder writes (`403 not_holder` for anyone else, admins included)."""
        item = st.service.items.progress(me, id, body.epoch, body.message, body.percent, body.data)
        return {"item": item.to_dict()}

    @app.post(
        "/v1/items/{id}/complete",
        response_model=i.CompletionReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def complete_item(id: ItemIdParam, body: i.CompleteIn, me: Caller, st: St) -> dict[str, Any]:
        """Complete the item, fenced by the epoch and only by the claim's holder (`403
        not_holder` for anyone else); a repeated `op_id` returns the first result.

        `follow_ups` are created under the item in the same transaction: all of them with the
        completion or none, and once per `op_id` (a repeat returns the same items)."""
        follow_ups = None
        if body.follow_ups is not None:
            follow_ups = [f.model_dump(exclude_none=True) for f in body.follow_ups]
        done = st.service.items.complete(
            me, id, body.epoch, body.result, body.op_id, follow_ups=follow_ups
        )
        st.waiters.notify(item_key(id))
        return done.to_dict()

    @app.post(
        "/v1/items/{id}/cancel",
        response_model=i.ItemReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 409, 413, 422),
    )
    def cancel_item(id: ItemIdParam, body: i.CancelIn, me: Caller, st: St) -> dict[str, Any]:
        """Cancel the item (its assignee, creator, a supervisor, an ancestor or an admin)."""
        item = st.service.items.cancel(me, id, body.reason)
        st.waiters.notify(item_key(id))
        return {"item": item.to_dict()}

    @app.post(
        "/v1/items/{id}/force-release",
        response_model=i.ClaimReply,
        tags=ITEMS,
        responses=P(400, 401, 403, 404, 413, 422),
    )
    def force_release_item(
        id: ItemIdParam, body: i.ForceReleaseItemIn, me: Caller, st: St
    ) -> dict[str, Any]:
        """End the item's live claim as an authority; the edge stays, the epoch is dead.

        The claim then reads `revoked`: even its assignee needs `takeover` with a `reason` (or
        an authority's `reassign`) to claim it again."""
        claim = st.service.items.force_release(me, id, body.reason)
        st.waiters.notify(item_key(id))
        return claim.to_dict()

    @app.post(
        "/v1/items/{id}/reassign",
        response_model=i.ItemReply,
        tags=ITEMS,
        responses={**P(400, 401, 403, 404, 409, 413, 422), 200: openapi.REASSIGN_LINKS},
    )
    def reassign_item(id: ItemIdParam, body: i.ReassignIn, me: Caller, st: St) -> dict[str, Any]:
        """Give the item to `to` as an authority: an admin, a supervisor, or an ancestor of
        its assignee (`403 forbidden` for anyone else).

        In one transaction any live claim ends (`force_released`, its epoch dead for progress
        and completion) and the assignee edge moves, recorded as a `reassigned` transfer with
        the `reason`; `to` then claims without a takeover. `404` for an unknown `to`, `409
        conflict` for a done or cancelled item."""
        item = st.service.items.reassign(me, id, body.to, body.reason)
        st.waiters.notify(item_key(id))
        return {"item": item.to_dict()}

    @app.post(
        "/v1/items/{id}/dispatch",
        response_model=i.DispatchReply,
        tags=ITEMS,
        responses={**P(400, 401, 403, 404, 409, 413, 422), 200: openapi.DISPATCH_LINKS},
    )
    def dispatch_item(id: ItemIdParam, body: i.DispatchIn, me: Caller, st: St) -> dict[str, Any]:
        """Create a child agent of yours and claim the item for it, in one transaction.

        The agent's token is in the reply, once. An item already claimed is `409 lease_held`
        and no agent is created. With `takeover` and a `reason`, an item whose claim lapsed,
        stalled or was revoked is dispatched again: one assigned to you or to your agents
        (their supervisor died), or one whose assignee you may force-release (else `403
        forbidden`).
        """
        dispatch = st.service.items.dispatch(
            me,
            id,
            body.agent,
            body.ttl_ms,
            body.task,
            body.session,
            takeover=bool(body.takeover),
            reason=body.reason,
        )
        return dispatch_out(dispatch)


def add_view_routes(app: FastAPI) -> None:
    @app.get("/v1/queue", response_model=i.ItemViewSummariesReply, tags=VIEWS, responses=P(401))
    def my_queue(me: Caller, st: St) -> dict[str, Any]:
        """Your items and your agents', with lease state `live`, `stalled` or `lapsed` (item
        summaries, within the server's list budget)."""
        return views_page(st.service.items.queue(me.name), st.limits.list_bytes)

    @app.get(
        "/v1/queue/{principal:path}",
        response_model=i.ItemViewSummariesReply,
        tags=VIEWS,
        responses=P(401, 404, 422),  # 404: a name with a line break matches no route
    )
    def queue_of(principal: PrincipalParam, me: Caller, st: St) -> dict[str, Any]:
        """The items of `principal` and of the agents it dispatched (as `/v1/queue`)."""
        return views_page(st.service.items.queue(principal), st.limits.list_bytes)

    @app.get("/v1/ready", response_model=i.ReadyReply, tags=VIEWS, responses=P(401, 422))
    def ready_items(
        me: Caller, st: St, limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50
    ) -> dict[str, Any]:
        """Open, unassigned, unleased items, by priority then age (`items`, summaries as in
        `/v1/items`; `next` is always null: the top of the queue is what is ready); then the
        claims that lapsed (`lapsed`): work whose holder stopped, to take over with a reason."""
        budget = st.limits.list_bytes
        page = items_page(st.service.items.ready_summaries(limit), MAX_LIMIT + 1, budget)
        lapsed = views_page(st.service.items.lapsed(limit), budget)
        truncated = page["truncated"] or lapsed["truncated"]
        return {**page, "lapsed": lapsed["items"], "truncated": truncated, "next": None}

    @app.get("/v1/briefing", response_model=i.BriefingReply, tags=VIEWS, responses=P(401, 422))
    def briefing(
        me: Caller,
        st: St,
        ready: Annotated[
            int, Query(ge=1, le=MAX_LIMIT, description="how many ready items to show")
        ] = 5,
    ) -> dict[str, Any]:
        """What you carry, what lapsed, what happened to your work since your last briefing
        (this call moves that cursor), and the top of the ready queue. A supervisor's (or an
        admin's) `lapsed` and `stalled` also list the claims of those it supervises."""
        return st.service.items.briefing(me, ready).to_dict()
