"""The OpenAPI document: every route lists every status it can return, as problem+json.

FastAPI builds the document; :func:`install` then makes it say exactly what the server accepts:

- errors are ``application/problem+json`` with the :class:`Problem` schema, and a 401 names its
  ``WWW-Authenticate`` header;
- integer bounds are exact (FastAPI's own models carry them as floats, so ``2**63 - 1`` would
  read ``9.223372036854776e+18``);
- bounds that come from the deployment's policy (marked ``x-tenure-limit`` in
  :mod:`tenure.verbs.fields`) are filled in from it: ``ttl_ms`` spans the policy's
  ``min_ttl``..``max_ttl``, keys are at most ``max_key_bytes`` long. Where per-prefix overrides
  differ, the document gives the widest bounds, and the service applies the key's own.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from tenure.core.policy import Policy, PolicySet
from tenure.server.http.schemas import Problem
from tenure.verbs.fields import LIMIT, MAX_INT

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
DESCRIPTIONS = {
    400: "malformed JSON or a body that is not an object (`invalid_request`)",
    401: "missing, unknown or revoked bearer token (`unauthenticated`)",
    403: "`not_holder` (someone else, or another session of yours, holds the lease; a "
    "fenced write with the current token from anyone but its holder; an edit of an item "
    "assigned to someone you have no authority over) or `forbidden` (not an authority: "
    "admin, supervisor or ancestor)",
    404: "`not_found`",
    409: "`lease_held`, `lease_lost`, `stale_token`, `assigned_to_other`, "
    "`idempotency_conflict` (an `op_id` repeated with another value) or `conflict` (the item "
    "is done or cancelled, an id or agent name is taken)",
    413: "`too_large`: a body, key, meta or value over its limit",
    422: "`invalid_request`: a field is missing, unknown, of the wrong type or out of range "
    "(or a generic lease verb on an `items/` key: use the item's own route)",
    429: "`quota_exceeded`: a per-principal bound (live leases, items created per minute, "
    "dispatched agents still working) would be passed; nothing was done (`limit`, `current`, "
    "`setting`)",
    503: "`unavailable`: the database cannot be reached",
}
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
AUTHENTICATE = {
    "WWW-Authenticate": {
        "description": "the bearer challenge (RFC 6750)",
        "schema": {"type": "string"},
        "required": True,
    }
}


def _link(operation: str, description: str, **fields: str) -> dict[str, Any]:
    """An OpenAPI link: ``path.x`` fields become parameters, the others the request body."""
    link: dict[str, Any] = {"operationId": operation, "description": description}
    params = {k.replace("path_", "path."): v for k, v in fields.items() if k.startswith("path_")}
    body = {k: v for k, v in fields.items() if not k.startswith("path_")}
    if params:
        link["parameters"] = params
    if body:
        link["requestBody"] = body
    return link


_KEY, _TOKEN = "$response.body#/lease/key", "$response.body#/lease/token"
LEASE_LINKS = {
    "links": {
        "renew": _link("renew", "renew this lease", key=_KEY, token=_TOKEN),
        "extend": _link("extend", "extend this lease", key=_KEY, token=_TOKEN),
        "release": _link("release", "release this lease", key=_KEY, token=_TOKEN),
        "get": _link("get_lease", "read this lease", path_key=_KEY),
        "write": _link("fenced_write", "write with this lease's token", key=_KEY, token=_TOKEN),
        "force_release": _link("force_release", "end this lease as an authority", key=_KEY),
    }
}
FENCED_LINKS = {
    "links": {"read": _link("fenced_read", "read the value", path_key="$response.body#/key")}
}
PRINCIPAL_LINKS = {
    "links": {
        "revoke": _link(
            "revoke_token",
            "revoke the token just issued",
            path_name="$response.body#/principal/name",
            path_token_id="$response.body#/token_id",
        )
    }
}

_ITEM, _EPOCH = "$response.body#/item/id", "$response.body#/lease/token"
ITEM_LINKS = {
    "links": {
        "get": _link("get_item", "read this item", path_id=_ITEM),
        "claim": _link("claim_item", "claim this item", path_id=_ITEM),
    }
}
CLAIM_LINKS = {
    "links": {
        "get": _link("get_item", "read the claimed item", path_id=_ITEM),
        "renew": _link("renew_item", "renew this claim", path_id=_ITEM, epoch=_EPOCH),
        "progress": _link(
            "progress_item", "report progress", path_id=_ITEM, epoch=_EPOCH, message="working"
        ),
        "complete": _link("complete_item", "complete the item", path_id=_ITEM, epoch=_EPOCH),
        "release": _link("release_item", "release this claim", path_id=_ITEM, epoch=_EPOCH),
    }
}

DISPATCH_LINKS = {  # the claim's own verbs are the agent's, with the token of the reply
    "links": {"get": _link("get_item", "read the dispatched item", path_id=_ITEM)}
}
REASSIGN_LINKS = {
    "links": {
        "get": _link("get_item", "read the reassigned item", path_id=_ITEM),
        "claim": _link("claim_item", "claim it (as its new assignee)", path_id=_ITEM),
    }
}


#: the links of each verb's reply, by the verb's name (the verb-table routes add them)
LINKS: dict[str, dict[str, Any]] = {
    "acquire": LEASE_LINKS,
    "fenced_write": FENCED_LINKS,
    "add_principal": PRINCIPAL_LINKS,
    "create_item": ITEM_LINKS,
    "claim_item": CLAIM_LINKS,
    "dispatch_item": DISPATCH_LINKS,
    "reassign_item": REASSIGN_LINKS,
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        s: {"description": DESCRIPTIONS[s], "content": {"application/problem+json": {}}}
        for s in statuses
    }


def _policies(policy: PolicySet) -> list[Policy]:
    return [policy.default, *(p for _, p in policy.overrides)]


def limits(policy: PolicySet) -> dict[str, dict[str, int]]:
    """The values of each ``x-tenure-limit`` marker under ``policy`` (widest over prefixes)."""
    every = _policies(policy)
    return {
        "ttl": {
            "minimum": min(p.min_ttl for p in every),
            "maximum": max(p.max_ttl for p in every),
        },
        "max_key_bytes": {"maxLength": max(p.max_key_bytes for p in every)},
    }


def _fix_schemas(node: Any, resolved: dict[str, dict[str, int]]) -> None:
    """Exact integer bounds and policy limits, everywhere in the document."""
    if isinstance(node, list):
        for item in node:
            _fix_schemas(item, resolved)
        return
    if not isinstance(node, dict):
        return
    for bound in BOUNDS:
        value = node.get(bound)
        if isinstance(value, float) and value.is_integer():
            node[bound] = MAX_INT if value >= MAX_INT else int(value)
    marker = node.pop(LIMIT, None)
    if isinstance(marker, str):
        node.update(resolved[marker])
    for child in node.values():
        _fix_schemas(child, resolved)


RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before trying again",
        "schema": {"type": "integer"},
    }
}


def _fix_responses(doc: dict[str, Any]) -> None:
    for path, item in doc.get("paths", {}).items():
        for operation in item.values():
            if path.startswith("/v1/"):  # every one of them reads or writes the database
                operation.setdefault("responses", {}).setdefault("503", {"description": ""})
            for status, response in operation.get("responses", {}).items():
                if not status.startswith(("4", "5")):
                    continue
                response["content"] = {"application/problem+json": {"schema": PROBLEM_REF}}
                response["description"] = DESCRIPTIONS.get(int(status), response["description"])
                if status == "401":
                    response["headers"] = AUTHENTICATE
                if status in ("429", "503"):
                    response["headers"] = RETRY_AFTER


def install(app: FastAPI, policy: PolicySet | None = None) -> None:
    resolved = limits(policy or PolicySet())

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(
            title=app.title, version=app.version, routes=app.routes, description=app.description
        )
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        schemas["Problem"] = Problem.model_json_schema()
        _fix_responses(doc)
        _fix_schemas(doc, resolved)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
