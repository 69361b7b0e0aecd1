"""tenure: leases with fencing tokens, and a work queue claimed under them.

Importing the package is cheap: each name below loads its module on first use (``tenure.Client``
imports the client, ``tenure.Service`` the service layer), so a small entry point such as the
command hook (``tenure hook``) starts without the client, the server or pydantic.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing is a third of this package's start
if TYPE_CHECKING:
    from typing import Any

    from tenure.client import AsyncClient, AsyncLeaseHandle, Client, LeaseHandle
    from tenure.core.clock import Clock, FakeClock, SystemClock
    from tenure.core.models import (
        Event,
        ExtendResult,
        FencedValue,
        FencedWrite,
        ForceReleaseResult,
        Lease,
        LostLease,
        Principal,
        ReleaseAllResult,
        ReleaseResult,
        RenewAllResult,
    )
    from tenure.core.policy import Policy, PolicySet
    from tenure.core.version import __version__
    from tenure.errors import (
        AssignedToOther,
        Conflict,
        FenceBusy,
        FenceMisuse,
        Forbidden,
        IdempotencyConflict,
        InvalidRequest,
        LeaseHeld,
        LeaseLost,
        NotFound,
        NotHolder,
        QuotaExceeded,
        RateLimited,
        StaleToken,
        TenureError,
        TooLarge,
        TooManyWaits,
        Unauthenticated,
        Unavailable,
    )
    from tenure.service.leases import Service
    from tenure.service.reaper import Reaper
    from tenure.store import Store, open_store

#: each public name and the module it comes from
_HOME = {
    "AsyncClient": "tenure.client",
    "AsyncLeaseHandle": "tenure.client",
    "Client": "tenure.client",
    "LeaseHandle": "tenure.client",
    "Clock": "tenure.core.clock",
    "FakeClock": "tenure.core.clock",
    "SystemClock": "tenure.core.clock",
    "Event": "tenure.core.models",
    "ExtendResult": "tenure.core.models",
    "FencedValue": "tenure.core.models",
    "FencedWrite": "tenure.core.models",
    "ForceReleaseResult": "tenure.core.models",
    "Lease": "tenure.core.models",
    "LostLease": "tenure.core.models",
    "Principal": "tenure.core.models",
    "ReleaseAllResult": "tenure.core.models",
    "ReleaseResult": "tenure.core.models",
    "RenewAllResult": "tenure.core.models",
    "Policy": "tenure.core.policy",
    "PolicySet": "tenure.core.policy",
    "__version__": "tenure.core.version",
    "AssignedToOther": "tenure.errors",
    "Conflict": "tenure.errors",
    "FenceBusy": "tenure.errors",
    "FenceMisuse": "tenure.errors",
    "Forbidden": "tenure.errors",
    "IdempotencyConflict": "tenure.errors",
    "InvalidRequest": "tenure.errors",
    "LeaseHeld": "tenure.errors",
    "LeaseLost": "tenure.errors",
    "NotFound": "tenure.errors",
    "NotHolder": "tenure.errors",
    "QuotaExceeded": "tenure.errors",
    "RateLimited": "tenure.errors",
    "StaleToken": "tenure.errors",
    "TenureError": "tenure.errors",
    "TooLarge": "tenure.errors",
    "TooManyWaits": "tenure.errors",
    "Unauthenticated": "tenure.errors",
    "Unavailable": "tenure.errors",
    "Service": "tenure.service.leases",
    "Reaper": "tenure.service.reaper",
    "Store": "tenure.store",
    "open_store": "tenure.store",
}

__all__ = [
    "AssignedToOther",
    "AsyncClient",
    "AsyncLeaseHandle",
    "Client",
    "Clock",
    "Conflict",
    "Event",
    "ExtendResult",
    "FakeClock",
    "FenceBusy",
    "FenceMisuse",
    "FencedValue",
    "FencedWrite",
    "Forbidden",
    "ForceReleaseResult",
    "IdempotencyConflict",
    "InvalidRequest",
    "Lease",
    "LeaseHandle",
    "LeaseHeld",
    "LeaseLost",
    "LostLease",
    "NotFound",
    "NotHolder",
    "Policy",
    "PolicySet",
    "Principal",
    "QuotaExceeded",
    "RateLimited",
    "Reaper",
    "ReleaseAllResult",
    "ReleaseResult",
    "RenewAllResult",
    "Service",
    "StaleToken",
    "Store",
    "SystemClock",
    "TenureError",
    "TooLarge",
    "TooManyWaits",
    "Unauthenticated",
    "Unavailable",
    "__version__",
    "open_store",
]


def __getattr__(name: str) -> Any:
    """A public name, loaded on first use; a submodule (``tenure.client``) likewise."""
    import importlib  # here: the command hook imports the package and needs none of it

    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
