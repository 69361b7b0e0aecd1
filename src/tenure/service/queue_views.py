"""The read side of the work queue: an item with its claim and history, lists, a principal's
queue, the ready queue and the briefing. :class:`tenure.service.queue.WorkQueue` (the verbs) builds
on it.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import replace

from tenure.core import validate as v
from tenure.core.claims import Briefing, ReadyView
from tenure.core.items import (
    CLOSED,
    ITEM_PREFIX,
    STATUSES,
    Item,
    ItemCursor,
    ItemSummary,
    ItemView,
    item_key,
)
from tenure.core.models import Event, EventQuery, Lease, LeaseQuery, Principal
from tenure.core.policy import PolicySet
from tenure.core.states import MADE_BY_A_TRANSFER, claim_state
from tenure.core.work import PARKED, TAKEN_AWAY, ItemQuery
from tenure.errors import InvalidRequest, NotFound
from tenure.service.engine import Who, as_principal
from tenure.store.base import Store

ITEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
BRIEFING_EVENTS = (*TAKEN_AWAY, "stalled")
#: the states of a claim in my queue that is not live: a briefing lists them as no longer live
NOT_LIVE = ("lapsed", "revoked", "reassigned")


def lapsed_claim(view: ItemView) -> bool:
    """Whether ``view``'s claim lapsed: its holder (still the assignee) let the lease run out;
    nobody released, force-released or reassigned it. Such work waits for a takeover."""
    lease = view.lease
    return (
        view.lease_state == "lapsed"
        and lease is not None
        and lease.holder == view.item.assignee
        and lease.state == "expired"
    )


def lease_matches(lease: Lease, prefix: str | None, holder: str | None, task: str | None) -> bool:
    """Whether ``lease`` passes the filters of a lease listing (``None``: any)."""
    return (
        (prefix is None or lease.key.startswith(prefix))
        and (holder is None or lease.holder == holder)
        and (task is None or lease.task == task)
    )


def check_item_id(item_id: object, field: str = "id") -> str:
    if not isinstance(item_id, str) or not ITEM_ID.match(item_id) or "\n" in item_id:
        raise InvalidRequest(f"{field}: 1-128 letters, digits, '.', '_' or '-'", field=field)
    return item_id


class QueueViews:
    """Reads of items and claims over ``store``; ``stall_ms``: a live claim without progress for
    this long is ``stalled``."""

    store: Store
    policy: PolicySet
    #: overrides every policy's ``stall_after`` when set (``TENURE_STALL_MS``)
    stall_ms: int | None

    def stall_for(self, item_id: str) -> int:
        """How long a claim on ``item_id`` may go without progress before it is stalled."""
        if self.stall_ms is not None:
            return self.stall_ms
        return self.policy.for_key(item_key(item_id)).stall_after

    def get(self, item_id: str) -> ItemView:
        item = self._item(item_id)
        return self._view(item, self.store.now_ms(), with_transfers=True)

    def list(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
        after: ItemCursor | None = None,
    ) -> builtins.list[Item]:
        """Items by priority, then age; ``after``: the page after the one that ended there."""
        query = ItemQuery(status, assignee, label, limit, after)
        return self.store.list_items(self._checked(query))

    def summaries(self, query: ItemQuery) -> builtins.list[ItemSummary]:
        """:meth:`list` without bodies, results and progress data (they stay in the store)."""
        return self.store.list_item_summaries(self._checked(query))

    def _checked(self, query: ItemQuery) -> ItemQuery:
        """``query`` with its fields checked (a bad one is refused) and normalised."""
        if query.status is not None and query.status not in STATUSES:
            raise InvalidRequest(f"status: one of {', '.join(STATUSES)}", field="status")
        assignee, label = query.assignee, query.label
        return replace(
            query,
            assignee=None if assignee is None else v.check_text("assignee", assignee, 256),
            label=None if label is None else v.check_text("label", label, 64),
            limit=v.check_limit(query.limit),
        )

    # views ---------------------------------------------------------------------------------
    def queue(self, principal: str) -> builtins.list[ItemView]:
        """Items assigned to ``principal``, with lease state ``live``, ``stalled`` or ``lapsed``."""
        name = v.check_text("principal", principal, 256)
        now = self.store.now_ms()
        items: builtins.list[Item] = []
        for owner in (name, *self._descendants(name)):
            items.extend(self.store.list_items(ItemQuery(assignee=owner, limit=v.MAX_LIMIT)))
        return [self._view(item, now) for item in items if item.status not in CLOSED]

    def _descendants(self, name: str) -> builtins.list[str]:
        """The agents ``name`` dispatched, and theirs: a parent sees its agents' claims."""
        children: dict[str, builtins.list[str]] = {}
        for p in self.store.list_principals():
            if p.parent:
                children.setdefault(p.parent, []).append(p.name)
        out: builtins.list[str] = []
        todo = list(children.get(name, []))
        while todo and len(out) < v.MAX_LIMIT:
            child = todo.pop(0)
            if child not in out and child != name:
                out.append(child)
                todo.extend(children.get(child, []))
        return out

    def ready(self, limit: int = 50) -> builtins.list[Item]:
        """Open, unassigned, unleased items by priority, then age."""
        return self.store.ready_items(self.store.now_ms(), v.check_limit(limit))

    def lapsed(self, limit: int = 50) -> builtins.list[ItemView]:
        """The claims that lapsed (:func:`lapsed_claim`), by priority then age: work whose
        holder stopped. Its assignee claims it again; anyone else takes it over with a reason."""
        limit = v.check_limit(limit)
        now = self.store.now_ms()
        # one read, not one per item
        live = {r.key for r in self.store.live(now, LeaseQuery(ITEM_PREFIX))}
        out: builtins.list[ItemView] = []
        for item in self._assigned():
            if item.revoked or item_key(item.id) in live:
                continue
            view = self._view(item, now)
            if lapsed_claim(view):
                out.append(view)
                if len(out) == limit:
                    break
        return out

    def lapsed_leases(
        self, prefix: str | None = None, holder: str | None = None, task: str | None = None
    ) -> builtins.list[Lease]:
        """The leases of the claims that lapsed, filtered as the live leases are listed."""
        leases = [x.lease for x in self.lapsed(v.MAX_LIMIT) if x.lease is not None]
        return sorted(
            (x for x in leases if lease_matches(x, prefix, holder, task)), key=lambda x: x.key
        )

    def ready_view(self, limit: int = 50) -> ReadyView:
        """The ready queue (up to ``limit`` open items), then up to ``limit`` lapsed claims."""
        limit = v.check_limit(limit)
        return ReadyView(tuple(self.ready(limit)), tuple(self.lapsed(limit)))

    def _assigned(self) -> builtins.list[Item]:
        """The assigned items in progress or blocked (at most :data:`v.MAX_LIMIT` of each), by
        priority then age: the ones a claim may hold."""
        items = [
            item
            for status in ("in_progress", "blocked")
            for item in self.store.list_items(ItemQuery(status, limit=v.MAX_LIMIT))
            if item.assignee
        ]
        return sorted(items, key=lambda i: (i.priority, i.created_at, i.id))

    def _claimed(self) -> builtins.list[ItemView]:
        """:meth:`_assigned`, with their lease state."""
        now = self.store.now_ms()
        return [self._view(item, now) for item in self._assigned()]

    def _supervised(
        self, me: Principal, skip: set[str]
    ) -> tuple[builtins.list[ItemView], builtins.list[ItemView]]:
        """The lapsed and the stalled claims of those ``me`` is an authority over by role (an
        admin: everyone; a supervisor: every non-admin), but for the items in ``skip``."""
        if not (me.is_admin or me.is_supervisor):
            return [], []
        admins = (
            set() if me.is_admin else {p.name for p in self.store.list_principals() if p.is_admin}
        )
        found = [
            x for x in self._claimed() if x.item.id not in skip and x.item.assignee not in admins
        ]
        stalled = [x for x in found if x.lease_state == "stalled"]
        return [x for x in found if lapsed_claim(x)], stalled

    def ready_summaries(self, limit: int = 50) -> builtins.list[ItemSummary]:
        """:meth:`ready` as summaries."""
        return self.store.ready_item_summaries(self.store.now_ms(), v.check_limit(limit))

    def briefing(self, who: Who, ready: int = 5) -> Briefing:
        """What I carry, what lapsed, what happened to my work since my last briefing."""
        me = self._who(who)
        ready = v.check_positive("ready", ready, v.MAX_LIMIT)  # before the cursor moves
        mine = self.queue(me.name)
        since = self.store.get_cursor(me.name, "briefing")
        # The cursor moves to the end of the window read first; only events up to it are shown,
        # so an event appended meanwhile (or past a full window) is shown next time, exactly once.
        head = self.store.last_event_id()  # no further: an id still in flight commits later
        window = self.store.events(EventQuery(after=since, limit=v.MAX_LIMIT, upto=head))
        upto = window[-1].id if window else since
        happened = [e for e in self._events_since(since) if e.id <= upto and self._concerns(me, e)]
        if window:
            self.store.set_cursor(me.name, "briefing", upto)
        # A supervisor (or an admin) also sees the lapsed and stalled claims of those it
        # supervises; an ancestor sees its agents' through its queue.
        others_lapsed, others_stalled = self._supervised(me, {x.item.id for x in mine})
        return Briefing(
            me.name,
            tuple(x for x in mine if x.lease_state in ("live", "stalled")),
            (*(x for x in mine if x.lease_state in NOT_LIVE), *others_lapsed),
            tuple(happened),
            tuple(self.ready(ready)),
            (*(x for x in mine if x.lease_state == "stalled"), *others_stalled),
            tuple(x for x in mine if x.item.status == PARKED),
        )

    def _events_since(self, after: int) -> builtins.list[Event]:
        out: builtins.list[Event] = []
        for kind in (*BRIEFING_EVENTS, "claimed"):
            out.extend(self.store.events(EventQuery(after=after, type=kind, limit=v.MAX_LIMIT)))
        return sorted(out, key=lambda e: e.id)

    def _concerns(self, me: Principal, event: Event) -> bool:
        if event.type == "claimed":  # a transfer away from me
            return event.data.get("previous") == me.name and event.actor != me.name
        people = {event.holder, event.data.get("previous")}
        if me.name in people:
            return event.actor != me.name or event.type == "expired"
        holder = event.holder or ""
        return holder.startswith(me.name + "/")  # my agents' work

    # helpers -------------------------------------------------------------------------------
    def _who(self, who: Who) -> Principal:
        return as_principal(who)

    def _item(self, item_id: str) -> Item:
        item = self.store.get_item(check_item_id(item_id))
        if item is None:
            raise NotFound(f"no item {item_id!r}", key=item_key(item_id), what="item")
        return item

    def _view(self, item: Item, now: int, with_transfers: bool = False) -> ItemView:
        rec = self.store.get(item_key(item.id))
        lease = rec.lease(now) if rec and rec.token == item.epoch and item.epoch else None
        transfers = tuple(self.store.transfers(item.id)) if with_transfers else ()
        stall = self.stall_for(item.id)
        state = claim_state(item, rec, now, stall)
        if state.word in MADE_BY_A_TRANSFER and state.at is None:
            # revoked, reassigned, released: when, by whom and why are in the latest transfer
            known = transfers or tuple(self.store.transfers(item.id))
            state = claim_state(item, rec, now, stall, known[-1] if known else None)
        return ItemView(item, lease, state.word, transfers, state)
