"""The REST routes of the verb table: one route per :class:`~tenure.verbs.table.Verb`.

A route parses its request with the verb's ``input`` (a POST's JSON body; a GET's or DELETE's
path parameters and query string), authenticates the caller, runs the verb and sends the verb's
``wire`` JSON. The verbs marked ``grouped`` (the hot writes of one key) run in the server's
executor, in its group commits; the others in a worker thread. A verb whose input has
``wait_ms`` long-polls: it waits in line on its ``key``
(:class:`~tenure.server.runtime.waiters.Waiters`), holding one of the caller's open waits, for
as long as its client stays (:mod:`tenure.server.http.waiting`). A GET
that finds nothing on a path that another route serves with another method (``GET
/v1/leases/acquire``) answers ``405``. The route's OpenAPI entry (operation id, reply schema,
problem statuses, description, links) comes from the verb too.
"""

from __future__ import annotations

import inspect
from functools import cache, partial
from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, create_model

from tenure.core.models import Principal
from tenure.errors import NotFound
from tenure.server.http import openapi, problems
from tenure.server.http.deps import Caller, St, State, reply
from tenure.server.http.waiting import CLIENT_GONE, wait_to_acquire
from tenure.server.runtime.departure import Withdrawn
from tenure.verbs.table import BODY_METHODS, PATH_PARAM, Verb, Wire

Param = inspect.Parameter


def add_verb_routes(app: FastAPI, verbs: list[Verb[Any, Any]]) -> None:
    """The routes of ``verbs``, POSTs first: a GET's ``{key:path}`` would match their paths
    too, and the first route that matches a path answers which methods it allows."""
    for verb in sorted(verbs, key=lambda v: v.method not in BODY_METHODS):
        app.add_api_route(
            verb.path,
            endpoint(verb),
            methods=[verb.method],
            name=verb.name,
            response_model=None if verb.status == 204 else verb.reply,
            status_code=verb.status,
            tags=list(verb.tags),
            description=verb.doc or None,
            responses={**openapi.problem_responses(*verb.problems), **_links(verb)},
        )


def _links(verb: Verb[Any, Any]) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI links of the verb's reply (:data:`tenure.server.http.openapi.LINKS`)."""
    links = openapi.LINKS.get(verb.name)
    return {verb.status: links} if links else {}


def endpoint(verb: Verb[Any, Any]) -> Any:
    """The route function of ``verb``: its signature tells FastAPI what to parse."""
    return _body_endpoint(verb) if verb.method in BODY_METHODS else _query_endpoint(verb)


def _body_endpoint(verb: Verb[Any, Any]) -> Any:
    """A POST, PUT or PATCH: the JSON body (``verb.body``, else ``verb.input``) and the path's
    parameters, which make the input together."""
    model = verb.body or verb.input
    if not PATH_PARAM.search(verb.path):

        async def serve_body(
            request: Request, body: BaseModel, me: Principal, st: State
        ) -> Response:
            return await _serve(verb, body, me, st, request)

        return _signed(serve_body, verb, [_param("request", Request), _param("body", model)])

    async def serve(
        request: Request, body: BaseModel, me: Principal, st: State, **path: Any
    ) -> Response:
        args = verb.input.model_validate({**body.model_dump(exclude_unset=True), **path})
        return await _serve(verb, args, me, st, request)

    params = [_param("request", Request), _param("body", model), *_path_params(verb)]
    return _signed(serve, verb, params)


def _query_endpoint(verb: Verb[Any, Any]) -> Any:
    """A GET or DELETE: the path's parameters and the query string make the input."""
    query = query_model(verb)

    async def serve(request: Request, me: Principal, st: State, **values: Any) -> Response:
        found = values.pop("query").model_dump(exclude_unset=True) if query else {}
        args = verb.input.model_validate({**found, **values})
        try:
            return await _serve(verb, args, me, st, request)
        except NotFound:
            problems.refuse_other_method(request)
            raise

    params = [_param("request", Request), *_path_params(verb)]
    if query is not None:
        in_query: Any = Annotated[query, Query()]
        params.append(Param("query", Param.KEYWORD_ONLY, annotation=in_query))
    return _signed(serve, verb, params)


def _param(name: str, annotation: Any) -> Param:
    return Param(name, Param.POSITIONAL_OR_KEYWORD, annotation=annotation)


def _path_params(verb: Verb[Any, Any]) -> list[Param]:
    """The path's parameters, with the JSON Schema of the input's fields of those names."""
    params = []
    for name in PATH_PARAM.findall(verb.path):
        extra = verb.input.model_fields[name].json_schema_extra
        schema = extra if isinstance(extra, dict) else None
        in_path: Any = Annotated[str, Path(json_schema_extra=schema)]
        params.append(Param(name, Param.KEYWORD_ONLY, annotation=in_path))
    return params


@cache
def query_model(verb: Verb[Any, Any]) -> type[BaseModel] | None:
    """The input's fields but the path's, as one model of query parameters (unknown ones are
    refused, as unknown body fields are); a hand-written route of a verb parses with it too."""
    path = set(PATH_PARAM.findall(verb.path))
    fields = {
        name: (info.annotation, info)
        for name, info in verb.input.model_fields.items()
        if name not in path
    }
    if not fields:
        return None
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"{verb.input.__name__}Query", __config__=ConfigDict(extra="forbid"), **fields
    )


def _signed(serve: Any, verb: Verb[Any, Any], params: list[Param]) -> Any:
    serve.__signature__ = inspect.Signature(
        [
            *[p for p in params if p.kind is Param.POSITIONAL_OR_KEYWORD],
            Param("me", Param.POSITIONAL_OR_KEYWORD, annotation=Caller),
            Param("st", Param.POSITIONAL_OR_KEYWORD, annotation=St),
            *[p for p in params if p.kind is Param.KEYWORD_ONLY],
        ],
        return_annotation=Response,
    )
    serve.__name__ = verb.name
    serve.__doc__ = verb.doc or None
    return serve


async def _serve(
    verb: Verb[Any, Any], args: BaseModel, me: Principal, st: State, request: Request
) -> Response:
    run = partial(verb, st.services, me, args)
    key = getattr(args, "key", None)
    wait_ms = getattr(args, "wait_ms", None)
    if not verb.grouped:
        return _reply(verb, await anyio.to_thread.run_sync(run))
    alone = getattr(args, "slots", None) is not None  # a semaphore: several keys' transactions
    if not wait_ms or key is None:
        ran = anyio.to_thread.run_sync(run) if alone else st.executor.run(run, key)
        return _reply(verb, await ran)

    async def attempt() -> Wire | bytes | None:
        return await (anyio.to_thread.run_sync(run) if alone else st.executor.run(run, key))

    try:
        out = await wait_to_acquire(st, me, key, attempt, wait_ms, request.receive)
    except Withdrawn:  # the client left: nobody reads this answer
        return Response(status_code=CLIENT_GONE)
    return _reply(verb, out)


def _reply(verb: Verb[Any, Any], out: Wire | bytes | None) -> Response:
    """The verb's JSON; ``bytes``: JSON the database already wrote, passed on unparsed."""
    if out is None:
        return Response(status_code=verb.status)
    response = (
        Response(out, media_type="application/json") if isinstance(out, bytes) else reply(out)
    )
    response.status_code = verb.status  # 201 for a creation
    return response
