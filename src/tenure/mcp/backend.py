"""The one small interface the MCP tools call: :class:`Backend`, a :class:`tenure.Client`.

Every front of the tools runs the same client, so they behave the same by construction:

- under stdio (``tenure mcp``), a client over HTTP to the server (its token is the principal),
  or in direct mode on a database URL, in the process's session (``TENURE_SESSION``, the
  harness's session, else one of its own);
- on the server (``/mcp`` on ``tenure serve``), a client over an in-process transport to the
  same app (:mod:`tenure.mcp.loopback`): each call goes through the real routes, their
  authentication (the caller's bearer token, forwarded) and their problem replies, in the
  session of the request's MCP connection.

Each backend acts in one *session*: claims and locks are taken in it, a token-less release ends
only its own, and the heartbeat renews only its leases, so a sibling connection under the same
principal neither keeps this one's leases alive nor is kept alive by it.

A verb takes what it needs positionally and the optional arguments as :data:`Fields`: the REST
field names of the arguments the caller gave (:func:`given`), passed on by name. The backend is
blocking and returns the models of :mod:`tenure.core` and :mod:`tenure.service.queue`; every
rule lives in the service behind the REST API.
"""

from __future__ import annotations

from typing import Any

from tenure.client import Client
from tenure.core import models as cm
from tenure.core.claims import ReadyView
from tenure.core.items import Item, ItemView
from tenure.core.validate import MAX_LIMIT
from tenure.service.queue import Briefing, Claim, Completion, ItemRelease
from tenure.service.queue_views import lease_matches

#: the optional arguments a caller gave, by their REST field names
Fields = dict[str, Any]


def given(**values: Any) -> Fields:
    """The arguments the caller gave: ``None`` means absent, as in the REST API."""
    return {k: v for k, v in values.items() if v is not None}


class Backend:
    """A :class:`tenure.Client` (over HTTP, in-process to the server's app, or direct mode on a
    database), acting in the client's session: the client sends it with every verb that takes
    or renews leases."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.items = client.items

    @property
    def session(self) -> str:
        return self.client.session

    def me(self) -> cm.Principal:
        return self.client.me()

    def heartbeat(self, keys: list[str] | None = None) -> cm.RenewAllResult:
        return self.client.renew_all(keys)

    def briefing(self, ready: int) -> Briefing:
        return self.items.briefing(ready)

    def ready(self, limit: int) -> ReadyView:
        return self.items.ready_view(limit)

    def list_items(self, filters: Fields, limit: int) -> list[Item]:
        return self.items.list(limit=limit, **filters)

    def update_item(self, item_id: str, changes: Fields) -> ItemView:
        return self.items.update(item_id, **changes)

    def cancel_item(self, item_id: str, reason: str) -> Item:
        return self.items.cancel(item_id, reason)

    def reopen_item(self, item_id: str, reason: str) -> Item:
        return self.items.reopen(item_id, reason)

    def queue(self, principal: str | None) -> list[ItemView]:
        return self.items.queue(principal)

    def show_item(self, item_id: str) -> ItemView:
        return self.items.get(item_id)

    def create_item(self, title: str, fields: Fields) -> Item:
        return self.items.create(title, **fields)

    def claim(self, item_id: str, fields: Fields) -> Claim:
        return self.items.claim(item_id, **fields)

    def renew(self, item_id: str, fields: Fields) -> cm.Lease:
        return self.items.renew(item_id, **fields)

    def extend(self, item_id: str, fields: Fields) -> cm.ExtendResult:
        return self.items.extend(item_id, **fields)

    def release(self, item_id: str, fields: Fields) -> ItemRelease:
        return self.items.release(item_id, **fields)

    def progress(self, item_id: str, epoch: int, message: str, fields: Fields) -> Item:
        return self.items.progress(item_id, epoch, message, **fields)

    def complete(self, item_id: str, epoch: int, fields: Fields) -> Completion:
        return self.items.complete(item_id, epoch, **fields)

    def reassign(self, item_id: str, to: str, reason: str) -> Item:
        return self.items.reassign(item_id, to, reason)

    def acquire_lock(self, key: str, fields: Fields) -> cm.Lease:
        return self.client.acquire(key, **fields)

    def renew_lock(self, key: str, token: int, fields: Fields) -> cm.Lease:
        return self.client.renew(key, token, **fields)

    def release_lock(self, key: str, fields: Fields) -> cm.ReleaseResult:
        return self.client.release(key, **fields)

    def list_leases(self, filters: Fields, lapsed: bool) -> list[cm.Lease]:
        live = self.client.list_leases(**filters)
        if not lapsed:
            return live
        found = [x.lease for x in self.items.ready_view(MAX_LIMIT).lapsed if x.lease is not None]
        ended = [x for x in found if lease_matches(x, **filters)]
        return [*live, *sorted(ended, key=lambda x: x.key)]

    def force_release(self, key: str, reason: str) -> cm.ForceReleaseResult:
        return self.client.force_release(key, reason)

    def force_release_item(self, item_id: str, reason: str) -> Claim:
        return self.items.force_release(item_id, reason)


#: the name it had while the server had a backend of its own
ClientBackend = Backend
