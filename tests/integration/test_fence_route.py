"""``tenure.fence.fenced``: a FastAPI dependency per route, served by a real uvicorn."""

# No `from __future__ import annotations`: FastAPI must see the dependencies named by locals.

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import Depends, FastAPI, Header, HTTPException

import tenure
from tenure.fence import (
    Admitted,
    CheckedFence,
    FenceRefused,
    KeyFence,
    MemoryFence,
    SqliteFence,
    TokenFence,
    fenced,
    headers,
    key_from_header,
    problem_response,
)
from uvicorn_thread import Served

AUTH = {"Authorization": "Bearer letmein"}


def user(authorization: Annotated[str | None, Header()] = None) -> str:
    """The app's own authentication."""
    if authorization != AUTH["Authorization"]:
        raise HTTPException(401, "who are you?")
    return "alice"


class Orders:
    """The user's service: ``PUT /orders/{id}`` fenced per order, ``POST /notes`` not."""

    def __init__(self, fence: KeyFence, *, auth_param: bool = False) -> None:
        self.fence = fence
        self.writes: list[tuple[str, Any]] = []
        app = FastAPI()
        app.add_exception_handler(FenceRefused, problem_response)
        if auth_param:
            guard = fenced("orders/{order_id}", fence=fence, auth=user)

            @app.put("/orders/{order_id}")
            def put_order(order_id: str, ok: Annotated[Admitted, Depends(guard)]) -> str:
                self.writes.append((order_id, ok))
                return "stored"
        else:
            guard = fenced("orders/{order_id}", fence=fence)

            @app.put("/orders/{order_id}")
            def put_order_(
                order_id: str,
                me: Annotated[str, Depends(user)],
                ok: Annotated[Admitted, Depends(guard)],
            ) -> str:
                self.writes.append((order_id, ok))
                return "stored"

        @app.post("/notes")
        def post_note(me: Annotated[str, Depends(user)]) -> str:
            self.writes.append(("note", None))
            return "noted"

        self.served = Served(app)

    def put(self, order: str, token: int | None, **extra: str) -> httpx.Response:
        sent = headers(f"orders/{order}", token) if token is not None else {}
        hdrs = {**AUTH, **sent, **extra}
        return self.served.http.put(f"/orders/{order}", headers=hdrs)


@pytest.fixture(params=["declared-first", "auth-param"])
def orders(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Orders]:
    service = Orders(
        SqliteFence(tmp_path / "fence.sqlite"), auth_param=request.param != "declared-first"
    )
    yield service
    service.served.stop()


def refusal(response: httpx.Response) -> tenure.TenureError:
    assert response.headers["content-type"] == "application/problem+json"
    return tenure.TenureError.from_problem(response.json())


def test_the_key_comes_from_the_route_not_from_the_caller(orders: Orders) -> None:
    assert orders.put("1", 7).status_code == 200
    late = orders.put("1", 5)
    assert late.status_code == 409
    error = refusal(late)
    assert isinstance(error, tenure.StaleToken) and error.current_token == 7
    elsewhere = orders.put("1", 9, **{"Tenure-Key": "orders/somewhere-else"})
    assert elsewhere.status_code == 422  # another key's token: refused, not admitted
    assert orders.fence.current("orders/somewhere-else") is None
    assert orders.writes == [("1", Admitted("orders/1", 7))]
    assert orders.put("2", 5).status_code == 200  # another order, another key


def test_authentication_runs_before_admission(orders: Orders) -> None:
    jam = orders.served.http.put("/orders/1", headers={"Tenure-Token": str(2**62)})
    assert jam.status_code == 401
    assert orders.fence.current("orders/1") is None  # the stranger's token never got in
    assert orders.put("1", 3).status_code == 200


def test_required_applies_per_route(orders: Orders) -> None:
    assert orders.served.http.post("/notes", headers=AUTH).status_code == 200
    missing = orders.put("1", None)
    assert missing.status_code == 422
    error = refusal(missing)
    assert isinstance(error, tenure.InvalidRequest) and error.field == "Tenure-Token"
    assert orders.writes == [("note", None)]


def test_the_in_memory_fence_is_loud() -> None:
    with pytest.warns(RuntimeWarning, match="MemoryFence, which forgets every token on restart"):
        fenced("orders/{order_id}", fence=MemoryFence())
    with pytest.warns(RuntimeWarning, match="not shared between worker processes"):
        TokenFence(FastAPI(), key="orders", fence=MemoryFence())


def test_the_header_key_is_only_an_explicit_choice(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="key"):
        TokenFence(FastAPI(), fence=SqliteFence(tmp_path / "f.sqlite"))  # type: ignore[call-arg]
    fence = SqliteFence(tmp_path / "f.sqlite")
    app = FastAPI()

    @app.post("/any")
    def any_key(
        ok: Annotated[Admitted, Depends(fenced(key_from_header, fence=fence))],
    ) -> list[Any]:
        return list(ok)

    served = Served(app)
    try:
        reply = served.http.post("/any", headers=headers("jobs/x", 9))
        assert reply.json() == ["jobs/x", 9]
    finally:
        served.stop()


def test_checked_mode_admits_only_tokens_tenure_issued(live_server: Any, tmp_path: Path) -> None:
    reader = tenure.Client(live_server.url, token=live_server.token_for("orders-service"))
    a = tenure.Client(live_server.url, token=live_server.token_for("worker-a"))
    orders = Orders(CheckedFence(reader, SqliteFence(tmp_path / "fence.sqlite")))
    try:
        lease = a.acquire("orders/1", ttl_ms=30_000)
        jam = orders.put("1", 2**62)
        assert jam.status_code == 409 and "never issued" in refusal(jam).detail
        assert orders.put("1", lease.token).status_code == 200  # not jammed
        unknown = orders.put("2", 1)  # no lease was ever granted on orders/2
        assert unknown.status_code == 409 and "never issued" in refusal(unknown).detail
        assert orders.writes == [("1", Admitted("orders/1", lease.token))]
    finally:
        orders.served.stop()
