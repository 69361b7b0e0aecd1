"""Chaos: a request admitted at the HTTP guard's door whose handler is then paused, while a
newer holder's request is admitted and writes. With the door check alone the paused handler's
write lands after the newer one (what the door check does not stop); with
``admitted.transaction(conn)`` around the handler's write it is refused (409 stale_token) and
the newer holder's write stands. Both the FastAPI dependency and the ``TokenFence``
middleware, each with the newer holder arriving while the stale handler is paused."""

# No `from __future__ import annotations`: FastAPI must see the dependency named by a local.
import sqlite3
import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

import tenure
from tenure.fence import (
    Admitted,
    FenceRefused,
    SqliteFence,
    TokenFence,
    fenced,
    problem_response,
)
from uvicorn_thread import Served

KEY = "orders/17"


class Pause:
    """The stale request's handler stops after the door check until ``resume`` is set."""

    def __init__(self) -> None:
        self.paused, self.resume = threading.Event(), threading.Event()

    def hold(self, request: Request) -> None:
        if request.headers.get("x-pause") == "1":
            self.paused.set()
            assert self.resume.wait(20), "never resumed"


def write(db_path: Path, admitted: Admitted, body: str, in_transaction: bool) -> None:
    db = sqlite3.connect(db_path, timeout=10)
    try:
        if in_transaction:
            with admitted.transaction(db):
                db.execute(
                    "INSERT OR REPLACE INTO orders VALUES ('17', ?, ?)", (body, admitted.token)
                )
        else:  # the door check alone
            with db:
                db.execute(
                    "INSERT OR REPLACE INTO orders VALUES ('17', ?, ?)", (body, admitted.token)
                )
    finally:
        db.close()


def dependency_app(tmp: Path, pause: Pause, in_transaction: bool) -> FastAPI:
    app = FastAPI()
    app.add_exception_handler(FenceRefused, problem_response)
    app.add_exception_handler(tenure.StaleToken, problem_response)
    guard = fenced("orders/{order_id}", fence=SqliteFence(tmp / "door.sqlite"))

    @app.put("/orders/{order_id}")
    def put_order(
        order_id: str,
        request: Request,
        order: dict[str, Any],
        admitted: Annotated[Admitted, Depends(guard)],
    ) -> dict[str, Any]:
        pause.hold(request)
        write(tmp / "orders.sqlite", admitted, order["body"], in_transaction)
        return {"token": admitted.token}

    return app


def middleware_app(tmp: Path, pause: Pause, in_transaction: bool) -> Any:
    inner = FastAPI()
    inner.add_exception_handler(tenure.StaleToken, problem_response)

    @inner.put("/orders/{order_id}")
    def put_order(order_id: str, request: Request, order: dict[str, Any]) -> JSONResponse:
        pause.hold(request)
        admitted: Admitted = request.state.tenure_fence
        write(tmp / "orders.sqlite", admitted, order["body"], in_transaction)
        return JSONResponse({"token": admitted.token})

    return TokenFence(inner, key=KEY, fence=SqliteFence(tmp / "door.sqlite"))


def stored(tmp: Path) -> tuple[str, int] | None:
    with sqlite3.connect(tmp / "orders.sqlite") as db:
        row = db.execute("SELECT body, token FROM orders WHERE id = '17'").fetchone()
    return None if row is None else (row[0], row[1])


@pytest.mark.parametrize("front", ["dependency", "middleware"])
@pytest.mark.parametrize("in_transaction", [True, False], ids=["in-transaction", "door-only"])
def test_a_paused_handler_past_the_door_never_overwrites_a_newer_holder(
    tmp_path: Path, front: str, in_transaction: bool
) -> None:
    with sqlite3.connect(tmp_path / "orders.sqlite") as setup:
        setup.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, body TEXT, token INT)")
        tenure.fence.TableFence().install(setup)
    pause = Pause()
    make = dependency_app if front == "dependency" else middleware_app
    served = Served(make(tmp_path, pause, in_transaction))
    stale_reply: list[Any] = []
    try:
        stale = threading.Thread(
            target=lambda: stale_reply.append(
                served.http.put(
                    "/orders/17",
                    json={"body": "eleven, stale"},
                    headers={"Tenure-Token": "11", "Tenure-Key": "orders/17", "X-Pause": "1"},
                    timeout=30,
                )
            )
        )
        stale.start()
        assert pause.paused.wait(20), "the stale request never reached its handler"
        newer = served.http.put(
            "/orders/17",
            json={"body": "twelve"},
            headers={"Tenure-Token": "12", "Tenure-Key": "orders/17"},
        )
        assert newer.status_code == 200, newer.text
        pause.resume.set()
        stale.join(30)
        assert len(stale_reply) == 1
        if in_transaction:
            assert stale_reply[0].status_code == 409, stale_reply[0].text
            problem = stale_reply[0].json()
            assert (problem["code"], problem["current_token"]) == ("stale_token", 12)
            assert stored(tmp_path) == ("twelve", 12)
        else:  # what the door check alone does not stop: the stale write lands last
            assert stale_reply[0].status_code == 200
            assert stored(tmp_path) == ("eleven, stale", 11)
    finally:
        pause.resume.set()
        served.stop()
