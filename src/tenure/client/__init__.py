"""The Python client of tenure: :class:`Client` (blocking) and :class:`AsyncClient` (asyncio).

Both have the same methods with the same parameters: :class:`Client` is generated from
:class:`AsyncClient` (``python scripts/gen_sync.py``). They build each request from the verb's
entry in the table (:mod:`tenure.verbs`), read replies with :mod:`tenure.client._wire`, share
the retry rules of :mod:`tenure.client._transport`, and differ only in how a call travels (the
transport): HTTP with httpx, or, given a database URL, direct mode (:mod:`.direct`), which runs
the service in this process.
``client.lease(...)`` holds a lease with a heartbeat (:mod:`.lease`); ``client.items`` is the
work queue, and ``client.items.work(...)`` holds a claim on an item the same way
(:mod:`.items`).

```python
import tenure

with tenure.Client() as client:  # TENURE_URL, TENURE_TOKEN
    with client.lease("jobs/nightly", ttl=30, task="cron:nightly", wait=60) as lease:
        client.fenced_write("reports/nightly", lease.token, {"rows": 42}, op_id="run-42")
        lease.check()  # raises tenure.LeaseLost once the lease is gone
```
"""

from tenure.client._call import TransportError, UnexpectedReply
from tenure.client._transport import RetryPolicy
from tenure.client._wire import IssuedToken
from tenure.client.aio import AsyncClient
from tenure.client.items import AsyncItems, AsyncWorkHandle, Items, WorkHandle
from tenure.client.lease import AsyncLeaseHandle, LeaseHandle
from tenure.client.sync import Client

__all__ = [
    "AsyncClient",
    "AsyncItems",
    "AsyncLeaseHandle",
    "AsyncWorkHandle",
    "Client",
    "IssuedToken",
    "Items",
    "LeaseHandle",
    "RetryPolicy",
    "TransportError",
    "UnexpectedReply",
    "WorkHandle",
]
