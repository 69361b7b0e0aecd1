"""The one small interface the MCP tools call, and its two implementations.

- :class:`ServiceBackend`: on the server (``/mcp`` on ``tenure serve``), the
  :class:`~tenure.Service` acting as the principal the request's bearer token authenticated, in
  the session of the request's MCP connection.
- :class:`ClientBackend`: under stdio (``tenure mcp``), a :class:`tenure.Client` over HTTP (its
  token is the principal) or in direct mode on a database URL, in the client's session (one per
  process, or ``TENURE_SESSION``).

Each backend acts in one *session*: claims and locks are taken in it, a token-less release ends
only its own, and the heartbeat renews only its leases, so a sibling connection under the same
principal neither keeps this one's leases alive nor is kept alive by it.

Both are blocking and return the models of :mod:`tenure.core` and :mod:`tenure.service.queue`;
every rule
lives in the service. A verb that ends a lease wakes the server's long-polls on its key, as the
REST routes do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tenure.client import Client
from tenure.core.claims import ReadyView
from tenure.core.items import Item, ItemView, item_key
from tenure.core.models import (
    ExtendResult,
    ForceReleaseResult,
    Lease,
    Principal,
    ReleaseResult,
    RenewAllResult,
)
from tenure.core.validate import MAX_LIMIT
from tenure.service.leases import Service
from tenure.service.queue import Briefing, Claim, Completion, ItemRelease
from tenure.service.queue_views import lease_matches


class Backend(Protocol):
    """What a tool may ask for, as one principal in one session. Arguments use the REST field
    names."""

    @property
    def session(self) -> str:
        """The session the calls act in (``""``: the principal's default session)."""
        ...

    def me(self) -> Principal: ...
    def heartbeat(self, keys: list[str] | None = None) -> RenewAllResult: ...
    def briefing(self, ready: int) -> Briefing: ...
    def ready(self, limit: int) -> ReadyView: ...
    def list_items(
        self, status: str | None, assignee: str | None, label: str | None, limit: int
    ) -> list[Item]: ...
    def update_item(self, item_id: str, changes: dict[str, Any]) -> ItemView: ...
    def cancel_item(self, item_id: str, reason: str) -> Item: ...
    def queue(self, principal: str | None) -> list[ItemView]: ...
    def show_item(self, item_id: str) -> ItemView: ...
    def create_item(
        self,
        title: str,
        body: str | None,
        priority: int | None,
        labels: list[str] | None,
        parent: str | None,
        id: str | None,
        parent_epoch: int | None = None,
    ) -> Item: ...
    def claim(
        self, item_id: str, ttl_ms: int | None, task: str | None, takeover: bool, reason: str | None
    ) -> Claim: ...
    def renew(self, item_id: str, epoch: int | None, ttl_ms: int | None) -> Lease: ...
    def extend(
        self, item_id: str, until: int | None, by_ms: int | None, epoch: int | None
    ) -> ExtendResult: ...
    def release(self, item_id: str, epoch: int | None) -> ItemRelease: ...
    def progress(
        self,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None,
        data: dict[str, Any] | None,
    ) -> Item: ...
    def complete(
        self,
        item_id: str,
        epoch: int,
        result: Any,
        op_id: str | None,
        follow_ups: list[dict[str, Any]] | None = None,
    ) -> Completion: ...
    def reassign(self, item_id: str, to: str, reason: str) -> Item: ...
    def acquire_lock(
        self, key: str, ttl_ms: int | None, task: str | None, meta: dict[str, Any] | None
    ) -> Lease: ...
    def renew_lock(self, key: str, token: int, ttl_ms: int | None) -> Lease: ...
    def release_lock(self, key: str, token: int | None) -> ReleaseResult: ...
    def list_leases(
        self, prefix: str | None, holder: str | None, task: str | None, lapsed: bool = False
    ) -> list[Lease]: ...
    def force_release(self, key: str, reason: str) -> ForceReleaseResult: ...
    def force_release_item(self, item_id: str, reason: str) -> Claim: ...


def given(**values: Any) -> dict[str, Any]:
    """The arguments the caller gave: ``None`` means absent, as in the REST API."""
    return {k: v for k, v in values.items() if v is not None}


class ServiceBackend:
    """The service, acting as an authenticated ``principal`` in ``session`` (``""``: the
    principal's default session); ``notify(key)`` wakes the long-polls on a key whose lease
    ended (the server's waiters)."""

    def __init__(
        self,
        service: Service,
        principal: Principal,
        notify: Callable[[str], None] | None = None,
        session: str = "",
    ) -> None:
        self.service, self.principal, self.session = service, principal, session
        self.items = service.items
        self._notify = notify or (lambda key: None)

    def me(self) -> Principal:
        return self.principal

    def heartbeat(self, keys: list[str] | None = None) -> RenewAllResult:
        return self.service.renew_all(self.principal, keys, session=self.session)

    def briefing(self, ready: int) -> Briefing:
        return self.items.briefing(self.principal, ready)

    def ready(self, limit: int) -> ReadyView:
        return self.items.ready_view(limit)

    def list_items(
        self, status: str | None, assignee: str | None, label: str | None, limit: int
    ) -> list[Item]:
        return self.items.list(status, assignee, label, limit)

    def update_item(self, item_id: str, changes: dict[str, Any]) -> ItemView:
        return self.items.update(self.principal, item_id, **changes)

    def cancel_item(self, item_id: str, reason: str) -> Item:
        item = self.items.cancel(self.principal, item_id, reason)
        self._notify(item_key(item_id))
        return item

    def queue(self, principal: str | None) -> list[ItemView]:
        return self.items.queue(self.principal.name if principal is None else principal)

    def show_item(self, item_id: str) -> ItemView:
        return self.items.get(item_id)

    def create_item(
        self,
        title: str,
        body: str | None,
        priority: int | None,
        labels: list[str] | None,
        parent: str | None,
        id: str | None,
        parent_epoch: int | None = None,
    ) -> Item:
        fields = given(
            body=body,
            priority=priority,
            labels=labels,
            parent=parent,
            id=id,
            parent_epoch=parent_epoch,
        )
        return self.items.create(self.principal, title, **fields)

    def claim(
        self, item_id: str, ttl_ms: int | None, task: str | None, takeover: bool, reason: str | None
    ) -> Claim:
        return self.items.claim(
            self.principal, item_id, ttl_ms, task, takeover, reason, session=self.session
        )

    def renew(self, item_id: str, epoch: int | None, ttl_ms: int | None) -> Lease:
        return self.items.renew(self.principal, item_id, epoch, ttl_ms)

    def extend(
        self, item_id: str, until: int | None, by_ms: int | None, epoch: int | None
    ) -> ExtendResult:
        return self.items.extend(self.principal, item_id, until, by_ms, epoch)

    def release(self, item_id: str, epoch: int | None) -> ItemRelease:
        result = self.items.release(self.principal, item_id, epoch, session=self.session)
        self._notify(item_key(item_id))
        return result

    def progress(
        self,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None,
        data: dict[str, Any] | None,
    ) -> Item:
        return self.items.progress(self.principal, item_id, epoch, message, percent, data)

    def complete(
        self,
        item_id: str,
        epoch: int,
        result: Any,
        op_id: str | None,
        follow_ups: list[dict[str, Any]] | None = None,
    ) -> Completion:
        done = self.items.complete(
            self.principal, item_id, epoch, result, op_id, follow_ups=follow_ups
        )
        self._notify(item_key(item_id))
        return done

    def reassign(self, item_id: str, to: str, reason: str) -> Item:
        item = self.items.reassign(self.principal, item_id, to, reason)
        self._notify(item_key(item_id))
        return item

    def acquire_lock(
        self, key: str, ttl_ms: int | None, task: str | None, meta: dict[str, Any] | None
    ) -> Lease:
        return self.service.acquire(self.principal, key, ttl_ms, task, meta, session=self.session)

    def renew_lock(self, key: str, token: int, ttl_ms: int | None) -> Lease:
        return self.service.renew(self.principal, key, token, ttl_ms)

    def release_lock(self, key: str, token: int | None) -> ReleaseResult:
        result = self.service.release(self.principal, key, token, session=self.session)
        if result.released:
            self._notify(key)
        return result

    def list_leases(
        self, prefix: str | None, holder: str | None, task: str | None, lapsed: bool = False
    ) -> list[Lease]:
        live = self.service.list(prefix, holder, task)
        return [*live, *self.items.lapsed_leases(prefix, holder, task)] if lapsed else live

    def force_release(self, key: str, reason: str) -> ForceReleaseResult:
        result = self.service.force_release(self.principal, key, reason)
        self._notify(key)
        return result

    def force_release_item(self, item_id: str, reason: str) -> Claim:
        claim = self.items.force_release(self.principal, item_id, reason)
        self._notify(item_key(item_id))
        return claim


class ClientBackend:
    """A :class:`tenure.Client` (HTTP with a token, or direct mode on a database), acting in the
    client's session: the client sends it with every verb that takes or renews leases."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.items = client.items

    @property
    def session(self) -> str:
        return self.client.session

    def me(self) -> Principal:
        return self.client.me()

    def heartbeat(self, keys: list[str] | None = None) -> RenewAllResult:
        return self.client.renew_all(keys)

    def briefing(self, ready: int) -> Briefing:
        return self.items.briefing(ready)

    def ready(self, limit: int) -> ReadyView:
        return self.items.ready_view(limit)

    def list_items(
        self, status: str | None, assignee: str | None, label: str | None, limit: int
    ) -> list[Item]:
        return self.items.list(status, assignee, label, limit)

    def update_item(self, item_id: str, changes: dict[str, Any]) -> ItemView:
        return self.items.update(item_id, **changes)

    def cancel_item(self, item_id: str, reason: str) -> Item:
        return self.items.cancel(item_id, reason)

    def queue(self, principal: str | None) -> list[ItemView]:
        return self.items.queue(principal)

    def show_item(self, item_id: str) -> ItemView:
        return self.items.get(item_id)

    def create_item(
        self,
        title: str,
        body: str | None,
        priority: int | None,
        labels: list[str] | None,
        parent: str | None,
        id: str | None,
        parent_epoch: int | None = None,
    ) -> Item:
        return self.items.create(
            title, body, priority, labels, parent, id, parent_epoch=parent_epoch
        )

    def claim(
        self, item_id: str, ttl_ms: int | None, task: str | None, takeover: bool, reason: str | None
    ) -> Claim:
        return self.items.claim(item_id, ttl_ms, task, takeover, reason)

    def renew(self, item_id: str, epoch: int | None, ttl_ms: int | None) -> Lease:
        return self.items.renew(item_id, epoch, ttl_ms)

    def extend(
        self, item_id: str, until: int | None, by_ms: int | None, epoch: int | None
    ) -> ExtendResult:
        return self.items.extend(item_id, until, by_ms, epoch)

    def release(self, item_id: str, epoch: int | None) -> ItemRelease:
        return self.items.release(item_id, epoch)

    def progress(
        self,
        item_id: str,
        epoch: int,
        message: str,
        percent: int | None,
        data: dict[str, Any] | None,
    ) -> Item:
        return self.items.progress(item_id, epoch, message, percent, data)

    def complete(
        self,
        item_id: str,
        epoch: int,
        result: Any,
        op_id: str | None,
        follow_ups: list[dict[str, Any]] | None = None,
    ) -> Completion:
        return self.items.complete(item_id, epoch, result, op_id, follow_ups=follow_ups)

    def reassign(self, item_id: str, to: str, reason: str) -> Item:
        return self.items.reassign(item_id, to, reason)

    def acquire_lock(
        self, key: str, ttl_ms: int | None, task: str | None, meta: dict[str, Any] | None
    ) -> Lease:
        return self.client.acquire(key, ttl_ms, task, meta)

    def renew_lock(self, key: str, token: int, ttl_ms: int | None) -> Lease:
        return self.client.renew(key, token, ttl_ms)

    def release_lock(self, key: str, token: int | None) -> ReleaseResult:
        return self.client.release(key, token)

    def list_leases(
        self, prefix: str | None, holder: str | None, task: str | None, lapsed: bool = False
    ) -> list[Lease]:
        live = self.client.list_leases(prefix, holder, task)
        if not lapsed:
            return live
        found = [x.lease for x in self.items.ready_view(MAX_LIMIT).lapsed if x.lease is not None]
        ended = [x for x in found if lease_matches(x, prefix, holder, task)]
        return [*live, *sorted(ended, key=lambda x: x.key)]

    def force_release(self, key: str, reason: str) -> ForceReleaseResult:
        return self.client.force_release(key, reason)

    def force_release_item(self, item_id: str, reason: str) -> Claim:
        return self.items.force_release(item_id, reason)
