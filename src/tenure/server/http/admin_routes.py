"""``/v1/admin/token-floor``: read and raise the token floor (admins only; see
:mod:`tenure.service.token_floors`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI
from pydantic import Field

from tenure.core.token_floor import MAX_FLOOR
from tenure.server.http import openapi
from tenure.server.http.deps import Caller, St
from tenure.service.token_floors import set_floor, show_floor
from tenure.verbs.fields import Body, Whole
from tenure.verbs.replies import Out

P = openapi.problem_responses


class FloorIn(Body):
    floor: Annotated[
        int, Field(ge=0, le=MAX_FLOOR, description="every token from now on exceeds it"), Whole
    ]


class FloorReply(Out):
    floor: int = Field(description="every token granted from now on is larger than this")
    max_token: int = Field(description="the largest token ever granted in this database")


def add_admin_routes(app: FastAPI) -> None:
    @app.get(
        "/v1/admin/token-floor",
        response_model=FloorReply,
        tags=["admin"],
        responses=P(401, 403),
    )
    def token_floor(me: Caller, st: St) -> dict[str, Any]:
        """The token floor and the largest token ever granted in this database (admins)."""
        return show_floor(st.service.store, me).to_dict()

    @app.put(
        "/v1/admin/token-floor",
        response_model=FloorReply,
        tags=["admin"],
        responses=P(400, 401, 403, 409, 413, 422),
    )
    def set_token_floor(body: FloorIn, me: Caller, st: St) -> dict[str, Any]:
        """Raise the token floor (admins): every token granted from now on, on any key, is
        larger than `floor` (a key whose token is already larger is unaffected). Floors only
        grow: a lower one is `409 conflict` and changes nothing. A live lease below the
        floor keeps its token until it ends. Recorded as `token_floor_set`."""
        return set_floor(st.service.store, me, body.floor).to_dict()
