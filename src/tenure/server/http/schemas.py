"""Request and response bodies of the REST API, for parsing and for the OpenAPI document.

The models shape the wire: types, required fields, no unknown fields. The rules (key and text
limits, the policy's TTL bounds, who may do what) live in the service, which checks every value;
the models only *publish* those rules (``json_schema_extra``) so that the OpenAPI document
describes exactly what the server accepts. Limits that depend on the deployment's policy are
marked with ``x-tenure-limit`` and filled in by :mod:`tenure.server.http.openapi`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from tenure.service.principals import MAX_TOKEN_TTL_MS
from tenure.verbs.fields import (
    Body,
    Name,
    Whole,
)
from tenure.verbs.replies import Out


class PrincipalIn(Body):
    name: Name
    kind: Literal["human", "agent", "service"] = "agent"
    roles: Annotated[list[Literal["admin", "supervisor"]], Field(max_length=2)] = []
    parent: Name | None = None
    ttl_ms: (
        Annotated[
            int,
            Field(ge=1000, le=MAX_TOKEN_TTL_MS, description="the token expires this long from now"),
            Whole,
        ]
        | None
    ) = None


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
