"""The REST API's own documents, beside the verbs' inputs and replies (:mod:`tenure.verbs`):
the problem document every error is, and the health checks' reply."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tenure.verbs.replies import Out


class Problem(BaseModel):
    """An RFC 9457 problem document: ``code`` is stable, the optional fields explain it."""

    model_config = ConfigDict(extra="allow")
    type: str
    title: str
    status: int
    code: str
    detail: str
    key: str | None = None
    field: str | None = Field(None, description="the request field at fault")
    holder: str | None = None
    session: str | None = Field(
        None, description='the holder\'s session (lease_held, not_holder; `""`: its default)'
    )
    task: str | None = None
    expires_at: int | None = None
    token: int | None = None
    held_key: str | None = Field(
        None,
        description="the key of the lease that blocks (lease_held): the asked key, a subtree "
        "above it, or a key under the subtree asked",
    )
    scope: str | None = Field(None, description="the blocking lease's scope (lease_held)")
    current_token: int | None = Field(None, description="the key's current token (stale_token)")
    reason: str | None = None
    actor: str | None = None
    what: str | None = None
    assignee: str | None = Field(None, description="the item's assignee (assigned_to_other)")
    lease_state: str | None = None
    lapsed_at: int | None = None
    limit: int | None = None
    size: int | None = None
    op_id: str | None = Field(None, description="the repeated op_id (idempotency_conflict)")
    version: int | None = Field(
        None, description="the register version the op_id wrote first (idempotency_conflict)"
    )


class Health(Out):
    status: Literal["ok"]
