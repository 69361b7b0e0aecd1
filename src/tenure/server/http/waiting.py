"""A waiting acquisition as the routes serve it (the hot path's and the verb table's): in line on
its key (:class:`~tenure.server.runtime.waiters.Waiters`), holding one of the caller's open
waits, for as long as its client stays.

A waiter that is gone is never granted: when the connection is lost while it waits
(:mod:`tenure.server.runtime.departure`), the acquisition leaves the key's queue and makes no
more attempts (:class:`~tenure.server.runtime.departure.Withdrawn`; the route then answers
nobody). A grant that committed before the departure was seen is ended at once through the
service (:meth:`tenure.service.leases.Service.withdraw`: a ``released`` event with reason
``waiter_gone``), so the next waiter gets the key. A grant that only renewed the session's
own lease (it held the key already) is left as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.types import Receive

from tenure.core.models import Principal
from tenure.errors import TenureError
from tenure.server.http.deps import State
from tenure.server.runtime.departure import Withdrawn, watching

T = TypeVar("T")
log = logging.getLogger("tenure.server")
#: the status a route records for a request whose client left (nginx's "client closed request")
CLIENT_GONE = 499
#: how the waiters whose client left ended: withdrawn while waiting, or granted and released
GONE_TOTAL = "tenure_waiters_gone_total"


async def wait_to_acquire(
    st: State,
    me: Principal,
    key: str,
    attempt: Callable[[], Awaitable[T]],
    wait_ms: int,
    receive: Receive,
) -> T:
    """``attempt()`` in line on ``key`` while the client stays; :class:`Withdrawn` if it left
    (a grant it did not see released)."""
    with st.slots.hold(me.name):  # one of the caller's open waits (past them: 429)
        async with watching(receive) as departure:
            try:
                out = await st.waiters.acquire(key, attempt, wait_ms, departure)
            except Withdrawn:
                st.service.metrics.inc(GONE_TOTAL, (("outcome", "withdrawn"),))
                raise
            if not departure.gone:
                return out
    await release_unreached(st, me, out)
    raise Withdrawn(key)


async def release_unreached(st: State, me: Principal, out: Any) -> None:
    """End the lease of ``out`` (an acquisition's reply: its wire form, or its JSON) that its
    client left before receiving, unless it was a renewal of a lease the session held already."""
    data = json.loads(out) if isinstance(out, bytes | str) else out
    lease = data.get("lease") if isinstance(data, dict) else None
    if not isinstance(lease, dict) or lease.get("renewals") != 0:
        return
    key, token = lease["key"], lease["token"]
    try:
        done = await st.executor.run(lambda: st.service.withdraw(me, key, token), key)
    except TenureError:  # it ended meanwhile (force-released and taken): nothing left to end
        return
    except Exception:  # it still ends at its deadline; the log says why it was not ended now
        log.exception("could not release %r (token %s) granted to a waiter that left", key, token)
        return
    if done.released:
        st.service.metrics.inc(GONE_TOTAL, (("outcome", "released"),))
