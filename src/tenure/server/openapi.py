"""The OpenAPI document: every route lists every status it can return, as problem+json."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from tenure.server.schemas import Problem

DESCRIPTIONS = {
    400: "malformed JSON or a body that is not an object (`invalid_request`)",
    401: "missing, unknown or revoked bearer token (`unauthenticated`)",
    403: "`not_holder` (someone else holds the lease) or `forbidden`",
    404: "`not_found`",
    409: "`lease_held`, `lease_lost` or `stale_token`",
    413: "`too_large`: a body, key, meta or value over its limit",
    422: "`invalid_request`: a field is missing, unknown, of the wrong type or out of range",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        s: {
            "description": DESCRIPTIONS[s],
            "content": {
                "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
            },
        }
        for s in statuses
    }


def install(app: FastAPI) -> None:
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
        for item in doc.get("paths", {}).values():
            for operation in item.values():
                responses = operation.get("responses", {})
                for status, response in responses.items():
                    content = response.get("content", {})
                    if status.startswith(("4", "5")) and "application/json" in content:
                        response["content"] = {
                            "application/problem+json": {
                                "schema": {"$ref": "#/components/schemas/Problem"}
                            }
                        }
                        response["description"] = DESCRIPTIONS.get(
                            int(status), response["description"]
                        )
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
