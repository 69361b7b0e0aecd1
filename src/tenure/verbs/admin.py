"""The compaction verb (admins): one pass of retention over the database, in small batches
(:mod:`tenure.service.compaction` holds its rules; this entry only carries it)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tenure.core.compaction import MAX_BATCH, MAX_BATCHES, CompactionResult
from tenure.core.models import Principal
from tenure.verbs.fields import Body, Whole
from tenure.verbs.replies import Out
from tenure.verbs.table import Family, Reply, Services


class CompactIn(Body):
    batch: Annotated[
        int, Field(ge=1, le=MAX_BATCH, description="rows one transaction deletes at most"), Whole
    ] = 1000
    max_batches: Annotated[
        int,
        Field(ge=1, le=MAX_BATCHES, description="batches of each kind this pass runs at most"),
        Whole,
    ] = 100


class CompactReply(Out):
    leases: int = Field(description="lease rows of idle keys deleted")
    fenced_ops: int = Field(description="op_ids of fenced writes past their window deleted")
    item_ops: int = Field(description="op_ids of item writes past their window deleted")
    events: int = Field(description="events past the retention deleted (their counts kept)")
    agents: int = Field(description="dispatched agents retired")
    retired_token: int = Field(
        description="the largest token of a deleted lease row: every key without a row gets "
        "a larger one"
    )
    batches: int = Field(description="the transactions this pass ran")
    complete: bool = Field(description="false: the pass stopped at its budget, more is due")
    elapsed_ms: int = Field(description="how long the pass took")


ADMIN = Family(tags=("admin",), problems=(400, 401, 403, 413, 422))


def _compact(services: Services, me: Principal, a: CompactIn) -> CompactionResult:
    """Run one compaction pass (admins): delete the lease rows of keys idle past the retention (a
    key acquired again still gets a larger token than any it had), op_ids past their
    idempotency window, events past the retention (all-time counts kept) and dispatched agents
    retired after their grace period; each batch its own short transaction. The server also
    runs it on a schedule."""
    return services.leases.compact(a.batch, a.max_batches, actor=me)


COMPACTED = Reply.of(CompactionResult.from_wire, CompactReply)
COMPACT = ADMIN.verb("compact", "POST /v1/admin/compact", CompactIn, _compact, COMPACTED)
