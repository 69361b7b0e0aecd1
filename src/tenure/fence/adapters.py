"""The adapter for a connection the fence is given: blocking (:mod:`tenure.fence.drivers`) or
asyncio (:mod:`tenure.fence.drivers_async`); for one of the wrong kind, what to use instead."""

from __future__ import annotations

from tenure.fence.drivers import SYNC, Driver, kind_of, unknown
from tenure.fence.drivers_async import ASYNC, AsyncDriver


def driver_of(conn: object) -> Driver:
    """The blocking adapter for ``conn``, or :class:`FenceMisuse` naming what to use."""
    make = kind_of(conn, SYNC)
    if make is None:
        raise unknown(conn, "transaction", "atransaction" if kind_of(conn, ASYNC) else "")
    return make(conn)  # type: ignore[no-any-return]


def async_driver_of(conn: object) -> AsyncDriver:
    """The asyncio adapter for ``conn``, or :class:`FenceMisuse` naming what to use."""
    make = kind_of(conn, ASYNC)
    if make is None:
        raise unknown(conn, "atransaction", "transaction" if kind_of(conn, SYNC) else "")
    return make(conn)  # type: ignore[no-any-return]
