"""tenure: leases with fencing tokens, and a work queue claimed under them."""

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
    ReleaseResult,
    RenewAllResult,
)
from tenure.core.policy import Policy, PolicySet
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

__version__ = "0.1.0.dev0"

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
    "RateLimited",
    "Reaper",
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
    "open_store",
]
