"""The arguments of the MCP tools: the REST API's own field types (:mod:`tenure.verbs.fields`)
with descriptions for agents, so a tool publishes and enforces the same limits as the route it
mirrors (:mod:`tenure.mcp.server` makes them binding, fills in the deployment's policy and
refuses unknown arguments)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tenure.core.validate import MAX_LIMIT
from tenure.verbs import fields as wire

ItemId = Annotated[wire.ItemId, Field(description="the item's id, e.g. it-1f2e3d4c5b")]
#: a lock's key; an item's key (items/<id>) is refused with the way to its item tools
LockKey = Annotated[wire.Key, Field(description="the lease's key, e.g. jobs/nightly-report")]
Epoch = Annotated[
    wire.Epoch, Field(description="the epoch your claim returned (claim.epoch, lease.token)")
]
OwnEpoch = Annotated[
    wire.Epoch | None, Field(description="your claim's epoch (default: the item's)")
]
TtlMs = Annotated[
    wire.Ttl | None,
    Field(description="lease term in milliseconds (default: the deployment's, 30000 unless set)"),
]
Task = Annotated[
    wire.Task | None, Field(description="what you are doing it for: a run id, a job or a session")
]
Scope = Annotated[
    wire.LeaseScope | None,
    Field(
        description="'subtree' on a key ending in '/' (e.g. files/REPO/src/billing/) locks every "
        "key under it too: refused while anyone else holds one of them; default 'key'"
    ),
]
Slots = Annotated[
    wire.Slots | None,
    Field(
        description="a semaphore of this many slots: up to that many holders at once, each a "
        "lease on a slot key of its own (KEY#slot/I, returned as lease.key: renew and release "
        "that key); everyone must ask the same number; default: a plain lock"
    ),
]
Reason = Annotated[wire.Reason, Field(description="why, recorded with your name for all to see")]
Token = Annotated[wire.Token, Field(description="the lease's token from acquire_lock")]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT), wire.Whole]
Meta = Annotated[
    dict[str, object] | None, Field(description="small JSON to show, at most max_meta_bytes")
]
Title = Annotated[wire.Title, Field(description="one line saying what is to be done")]
Body = Annotated[wire.ItemBody | None, Field(description="details, in Markdown")]
Priority = Annotated[wire.Priority | None, Field(description="0 most urgent; default 2")]
Labels = Annotated[wire.Labels | None, Field(description="labels, e.g. area/auth")]
Filter = Annotated[
    str | None, Field(max_length=1024, json_schema_extra={"pattern": wire.FILTER_PATTERN})
]
Principal = Annotated[
    str,
    Field(
        json_schema_extra={"minLength": 1, "maxLength": 256, "pattern": wire.LINE_PATTERN},
        description="a principal's name, e.g. jo/agent-2",
    ),
]
HeartbeatKeys = Annotated[
    list[wire.Key] | None,
    Field(
        max_length=wire.MAX_RENEW_KEYS,
        description=f"only these keys, at most {wire.MAX_RENEW_KEYS} (default: all leases of "
        "this session)",
    ),
]
Message = Annotated[wire.ProgressMessage, Field(description="what you did or are doing, one line")]
