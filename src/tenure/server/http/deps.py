"""What every route depends on: the server's state, the caller, common parameters, the reply.

Routes import these from here, never from :mod:`tenure.server.http.app` (which imports the routes).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tenure.core.models import Principal
from tenure.core.validate import bearer_token
from tenure.server.http.auth import Authenticator
from tenure.server.http.scrape import StatsCache
from tenure.server.runtime.executor import Executor
from tenure.server.runtime.feed import Bell
from tenure.server.runtime.waiters import Slots, Waiters
from tenure.service.leases import Service
from tenure.service.principals import Principals
from tenure.service.reaper import Reaper
from tenure.settings import Limits
from tenure.verbs.table import Services

bearer = HTTPBearer(auto_error=False, description="a token from `tenure principal add`")


@dataclass
class State:
    service: Service
    principals: Principals
    waiters: Waiters
    reaper: Reaper
    bell: Bell
    executor: Executor
    limits: Limits
    #: open long-polls and event streams per principal (``limits.max_waits`` each)
    slots: Slots
    #: the database's figures behind ``/metrics``, read at most every few seconds
    scrape: StatsCache
    #: every route's authentication (tenure.server.http.auth)
    auth: Authenticator

    @functools.cached_property
    def services(self) -> Services:
        """What the verbs run on: built once (every hot call reads it)."""
        return Services(self.service, self.principals, self.limits)


async def state(request: Request) -> State:
    """Async: a plain attribute read, no worker thread needed (sync dependencies get one)."""
    st: State = request.app.tenure
    return st


async def caller(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Principal:
    """Async: a known token costs no worker thread (an unknown one is looked up in one)."""
    st: State = request.app.tenure
    # ``creds`` only puts the scheme in the OpenAPI document: the header is read as everywhere
    token = bearer_token(request.headers.get("authorization"))
    return await st.auth.caller(request.scope, token)


Caller = Annotated[Principal, Depends(caller)]
St = Annotated[State, Depends(state)]


def dumps(body: dict[str, Any]) -> bytes:
    """What Starlette's JSONResponse would send for ``body``."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def reply(body: dict[str, Any]) -> Response:
    """The JSON of a reply built from the service's own models, which have the exact fields of
    the route's ``response_model`` (so the OpenAPI document stays true): returning a Response
    skips FastAPI's second validation and serialisation of what the service already shaped.
    The bytes are what Starlette's JSONResponse would send."""
    return Response(dumps(body), media_type="application/json")
