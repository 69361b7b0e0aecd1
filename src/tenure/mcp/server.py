"""The MCP server of the tools: the SDK's :class:`MCPServer` with strict arguments.

Each tool registered with :func:`tenure.mcp.tooling.tool` gets, in place of the SDK's lenient
argument model, one that refuses unknown arguments (``additionalProperties: false``), takes no
type it was not given (no ``"600000"`` for an integer) and enforces every bound its schema
publishes: the ``minLength``/``maxLength`` of the REST API's field types (which REST leaves to
the service) and the bounds that come from the deployment's policy (``x-tenure-limit``:
``ttl_ms`` between the policy's ``min_ttl`` and ``max_ttl``, keys up to ``max_key_bytes``),
filled in from ``policy``, or from the bounds a server's OpenAPI document states
(:func:`openapi_bounds`: ``tenure mcp`` on a server's URL, whose policy is the server's, gets
the same schemas as ``/mcp`` on that server). Without either, the TTL keeps the REST bounds;
the server checks the policy in any case. Arguments that do not
fit are refused in the house form (:func:`tenure.mcp.failures.arguments_refused`) before
anything runs.

A tool that is not read-only renews the live leases of the caller's session before it runs
(:data:`RENEWS`, read by :func:`tenure.mcp.tools.act`); a read-only one changes nothing.
"""

from __future__ import annotations

import contextvars
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from tenure.core.policy import PolicySet
from tenure.mcp.failures import arguments_refused, refusal
from tenure.verbs.fields import LIMIT

Bounds = dict[str, dict[str, int]]
#: whether the tool being called renews the caller's leases first (not when read-only)
RENEWS: contextvars.ContextVar[bool] = contextvars.ContextVar("tenure_mcp_renews", default=True)
BOUNDS = {"minLength": "min_length", "maxLength": "max_length", "minimum": "ge", "maximum": "le"}


class StrictArguments(ArgModelBase):
    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)


def policy_bounds(policy: PolicySet | None) -> Bounds:
    """The values of each ``x-tenure-limit`` marker under ``policy``, widest over its prefixes
    (the service applies each key's own); none without a policy."""
    if policy is None:
        return {}
    every = [policy.default, *(p for _, p in policy.overrides)]
    return {
        "ttl": {"minimum": min(p.min_ttl for p in every), "maximum": max(p.max_ttl for p in every)},
        "max_key_bytes": {"maxLength": max(p.max_key_bytes for p in every)},
    }


#: where a server's OpenAPI document states each marker's bounds: the acquire body's fields
ACQUIRE_PATH = "/v1/leases/acquire"
MARKED_FIELDS = {
    "ttl": ("ttl_ms", ("minimum", "maximum")),
    "max_key_bytes": ("key", ("maxLength",)),
}


def openapi_bounds(doc: Any) -> Bounds:
    """The values of each ``x-tenure-limit`` marker as a server's OpenAPI document states them
    (filled in from its policy); none it does not state."""
    try:
        body = doc["paths"][ACQUIRE_PATH]["post"]["requestBody"]["content"]["application/json"]
        schema = body["schema"]
        if "$ref" in schema:
            schema = doc["components"]["schemas"][schema["$ref"].rpartition("/")[2]]
        fields = schema["properties"]
    except (KeyError, TypeError):
        return {}
    found: Bounds = {}
    for marker, (name, keys) in MARKED_FIELDS.items():
        field = fields.get(name) if isinstance(fields, dict) else None
        parts = [field, *field.get("anyOf", [])] if isinstance(field, dict) else []
        values = {k: p[k] for p in parts if isinstance(p, dict) for k in keys if k in p}
        if all(isinstance(values.get(k), int) for k in keys):
            found[marker] = values
    return found


def published(info: FieldInfo, bounds: Bounds) -> dict[str, int]:
    """The bounds a field type publishes in its ``json_schema_extra``, its marker's filled in."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    own = {k: v for k, v in extra.items() if k in BOUNDS and isinstance(v, int)}
    marker = extra.get(LIMIT)
    return {**own, **(bounds.get(marker, {}) if isinstance(marker, str) else {})}


def binding(annotation: Any, bounds: Bounds) -> Any:
    """``annotation`` with the bounds its parts only publish made binding, through unions,
    lists and nested ``Annotated``."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        extra = [enforce(m, bounds) for m in annotation.__metadata__ if isinstance(m, FieldInfo)]
        inner = binding(annotation.__origin__, bounds)
        return Annotated[(inner, *annotation.__metadata__, *(e for e in extra if e))]
    if origin in (Union, UnionType):
        return Union[tuple(binding(a, bounds) for a in args)]  # noqa: UP007
    if origin is list and len(args) == 1:
        return list[binding(args[0], bounds)]  # type: ignore[misc]
    return annotation


def enforce(info: FieldInfo, bounds: Bounds) -> FieldInfo | None:
    given = {BOUNDS[k]: v for k, v in published(info, bounds).items()}
    if not given:
        return None
    field: FieldInfo = Field(
        min_length=given.get("min_length"),
        max_length=given.get("max_length"),
        ge=given.get("ge"),
        le=given.get("le"),
    )
    return field


def fill_markers(node: Any, bounds: Bounds) -> None:
    """Replace each ``x-tenure-limit`` marker of a JSON schema with the bounds it stands for."""
    if isinstance(node, list):
        for child in node:
            fill_markers(child, bounds)
    elif isinstance(node, dict):
        marker = node.pop(LIMIT, None)
        if isinstance(marker, str):
            node.update(bounds.get(marker, {}))
        for child in node.values():
            fill_markers(child, bounds)


def harden(tool: Tool, bounds: Bounds) -> None:
    """Give ``tool`` the strict argument model and the input schema that says so."""
    lenient = tool.fn_metadata.arg_model
    fields: dict[str, Any] = {}
    for name, info in lenient.model_fields.items():
        outer = enforce(info, bounds)
        annotation = binding(info.annotation, bounds)
        if outer is not None:
            annotation = Annotated[annotation, outer]
        fields[name] = (annotation, info)
    strict = create_model(lenient.__name__, __base__=StrictArguments, **fields)
    schema = strict.model_json_schema(by_alias=True)
    fill_markers(schema, bounds)
    tool.fn_metadata.arg_model = strict
    tool.parameters = schema


def renews(tool: Tool) -> bool:
    return not (tool.annotations is not None and tool.annotations.read_only_hint)


class TenureServer(MCPServer[Any]):
    """:class:`MCPServer` whose tools take strict arguments, bounded by ``policy``."""

    def __init__(
        self,
        *args: Any,
        policy: PolicySet | None = None,
        bounds: Bounds | None = None,
        **kwargs: Any,
    ) -> None:
        """``bounds``: the policy's as a server states them (:func:`openapi_bounds`), for a
        server's policy this process does not have; else ``policy``'s."""
        super().__init__(*args, **kwargs)
        self.bounds = policy_bounds(policy) if bounds is None else bounds

    def harden_tool(self, name: str) -> None:
        """Give the tool ``name`` strict arguments, bounded by the policy."""
        tool = self._tool_manager.get_tool(name)
        assert tool is not None
        harden(tool, self.bounds)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            known = ", ".join(t.name for t in self._tool_manager.list_tools())
            return refusal(f"not_found: no tool {name!r}. The tools are {known}.")
        token = RENEWS.set(renews(tool))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(
                exc.__cause__, ValidationError
            ):
                raise  # a crash, or a reply that does not fit its schema: not the caller's fault
            text = arguments_refused(name, tool.parameters, exc.__cause__)
            return refusal(text)
        finally:
            RENEWS.reset(token)
