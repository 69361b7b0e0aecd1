"""Lease handles: hold a lease while a block runs, with a heartbeat that keeps it alive.

``with client.lease(key, ttl=30) as lease:`` acquires ``key`` (waiting up to ``wait`` seconds),
renews it every ``ttl``/3 seconds in the background (a thread for :class:`LeaseHandle`, a task
for :class:`AsyncLeaseHandle`), and releases it on exit, also when the block raises. The lease
is the client's session's (``client.session``): another client of the same principal waits or
is refused (:class:`~tenure.LeaseHeld`) like anyone else, and the heartbeat renews this lease
by its token only.

**The client's own deadline.** The heartbeat keeps a deadline measured on this process's
monotonic clock: the instant the last *successful* acquire or renew request was *sent*, plus the
lease's ttl. The server's deadline is at least that late (it renewed after the request left), so
a slow reply can only make the client more careful, and clocks never have to agree.

**Transient failures** of a renewal (no connection, timeouts, 5xx, 429, any reply that is not a
verdict on the lease) are retried with exponential backoff and jitter until that deadline; each
try's timeout ends at the deadline.

**A lost lease is never silent.** The lease is lost when the deadline passes without a
successful renewal (``lost_reason == "deadline"``) or when the server says it is gone
(``lease_lost`` gives its reason: ``expired``, ``released``, ``force_released``,
``taken_over``; ``not_holder``, ``stale_token`` and ``not_found`` name themselves). Then
``lease.lost`` is true, ``lease.check()`` raises :class:`~tenure.LeaseLost` with the reason, and
the optional ``on_lost(lease)`` callback runs once (in the heartbeat thread or task; a coroutine
it returns is scheduled). The async variant also cancels the task that entered the block and,
on the way out, turns that cancellation into :class:`~tenure.LeaseLost` (like
:func:`asyncio.timeout` does with ``TimeoutError``, with ``Task.uncancel()``, so a cancellation
from outside still propagates as such). If the block ends normally although the lease was lost
and it never learned so (from ``check()``, ``lost`` or ``on_lost``), leaving it raises
:class:`~tenure.LeaseLost`; if the block raised, its exception propagates with a note.

On exit the heartbeat stops and the lease is released, best effort: a failing release is logged,
never raised over the block's own exception (the lease then lapses at its deadline).

The machinery is shared with the work handles of :mod:`tenure.client.work`, which hold an
item's claim: what a handle knows is in :mod:`tenure.client._lease_state` (no I/O), the
heartbeats are :mod:`tenure.client._held` (a thread) and :mod:`tenure.client._held_aio` (a
task), and the handles are in :mod:`tenure.client._handles_aio`, from which the blocking ones
(:mod:`tenure.client._handles`) are generated.
"""

from tenure.client._handles import FencedLeaseHandle, LeaseHandle
from tenure.client._handles_aio import AsyncFencedLeaseHandle, AsyncLeaseHandle

__all__ = ["AsyncFencedLeaseHandle", "AsyncLeaseHandle", "FencedLeaseHandle", "LeaseHandle"]
