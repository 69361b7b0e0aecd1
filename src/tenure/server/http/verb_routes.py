"""The REST routes of the verb table: one route per :class:`~tenure.verbs.table.Verb`.

A route parses the body with the verb's ``input``, authenticates the caller, runs the verb in the
server's executor (the same group commits as every write) and sends the verb's ``wire`` JSON.
A verb whose input has ``wait_ms`` long-polls: it waits in line on its ``key``
(:class:`~tenure.server.runtime.waiters.Waiters`), holding one of the caller's open waits.
The route's OpenAPI entry (operation id, reply schema, problem statuses, description, links)
comes from the verb too.
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

from fastapi import FastAPI, Response
from pydantic import BaseModel

from tenure.core.models import Principal
from tenure.server.http import openapi
from tenure.server.http.deps import Caller, St, State, reply
from tenure.verbs.table import Verb, Wire


def add_verb_routes(app: FastAPI, verbs: list[Verb[Any, Any]]) -> None:
    for verb in verbs:
        app.add_api_route(
            verb.path,
            endpoint(verb),
            methods=[verb.method],
            name=verb.name,
            response_model=verb.reply,
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

    async def serve(body: BaseModel, me: Principal, st: State) -> Response:
        run = partial(verb, st.services, me, body)
        key = getattr(body, "key", None)
        wait_ms = getattr(body, "wait_ms", None)
        if not wait_ms or key is None:
            return reply(await st.executor.run(run, key))

        async def attempt() -> Wire:
            return await st.executor.run(run, key)

        with st.slots.hold(me.name):  # a long-poll: one of the caller's open waits
            return reply(await st.waiters.acquire(key, attempt, wait_ms))

    Param = inspect.Parameter
    serve.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            Param("body", Param.POSITIONAL_OR_KEYWORD, annotation=verb.input),
            Param("me", Param.POSITIONAL_OR_KEYWORD, annotation=Caller),
            Param("st", Param.POSITIONAL_OR_KEYWORD, annotation=St),
        ],
        return_annotation=Response,
    )
    serve.__name__ = verb.name
    serve.__doc__ = verb.doc or None
    return serve
