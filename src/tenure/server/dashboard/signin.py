"""``POST /v1/signin``: the dashboard trades a one-time sign-in code (``tenure dashboard``'s
link, :mod:`tenure.core.signin`) for a session token of the code's principal.

The one route without a bearer token: the code is the credential. It is 256 random bits, good
once and for a minute, so guessing one is hopeless; a code that is malformed is refused before
the database is asked.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from tenure.server.http import openapi
from tenure.server.http.deps import St
from tenure.verbs.replies import PrincipalReply


class SigninIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    code: Annotated[str, Field(max_length=64, description="the code of a `#signin=` link")]


def add_signin_route(app: FastAPI) -> None:
    @app.post(
        "/v1/signin",
        tags=["principals"],
        status_code=201,
        response_model=PrincipalReply,
        responses=openapi.problem_responses(400, 401, 413, 422),
    )
    async def signin(body: SigninIn, st: St) -> Any:
        """Trade a one-time sign-in code (`POST /v1/signin/codes`) for a token of its principal
        that expires after 12 hours. A code works once and for a minute: an unknown, used or
        expired one is `401 unauthenticated`. No bearer token: the code is the credential."""
        issued = await anyio.to_thread.run_sync(st.principals.redeem, body.code)
        return JSONResponse(issued.to_dict(), status_code=201)
