"""No silent defaults in the HTTP guards: the store is named, the route's key is built from its
converted path parameters, and a token must come with the key it was issued for."""

# No `from __future__ import annotations`: FastAPI must see the dependencies named by locals.

from pathlib import Path
from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI

import tenure
from tenure.fence import Admitted, RouteGuard, SqliteFence, TokenFence, fenced, headers
from uvicorn_thread import Served


def test_a_guard_without_a_store_is_refused_at_setup() -> None:
    with pytest.raises(tenure.FenceMisuse, match="ConnectedFence") as refused:
        fenced("orders/{order_id}")
    assert (refused.value.field, refused.value.state) == ("fence", "missing")
    with pytest.raises(tenure.FenceMisuse, match="no default"):
        TokenFence(FastAPI(), key="orders")
    with pytest.raises(tenure.FenceMisuse, match="admit"):
        fenced("orders/{order_id}", fence=object())  # type: ignore[arg-type]


def orders_app(guard: RouteGuard, seen: list[Any], store: Any) -> FastAPI:
    app = FastAPI()

    @app.put("/orders/{order_id}")
    def put_order(order_id: int, ok: Annotated[Admitted, Depends(guard)]) -> int:
        seen.append(ok)
        return order_id

    @app.put("/items/{item_id:int}")
    def put_item(
        item_id: int, ok: Annotated[Admitted, Depends(fenced("items/{item_id}", fence=store))]
    ) -> int:
        seen.append(ok)
        return item_id

    return app


def test_two_replicas_sharing_a_store_refuse_a_stale_token(
    live_server: Any, tmp_path: Path
) -> None:
    a = tenure.Client(live_server.url, token=live_server.token_for("worker-a"))
    b = tenure.Client(live_server.url, token=live_server.token_for("worker-b"))
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    seen: list[Any] = []
    path = tmp_path / "shared-fence.sqlite"  # one store: each replica opens it itself
    replicas = [
        Served(
            orders_app(
                fenced("orders/{order_id}", fence=SqliteFence(path)), seen, SqliteFence(path)
            )
        )
        for _ in range(2)
    ]
    try:
        old = a.acquire("orders/17", ttl_ms=30_000)
        admin.force_release("orders/17", reason="worker-a is paused")
        new = b.acquire("orders/17", ttl_ms=30_000)
        first, second = (r.http for r in replicas)
        assert first.put("/orders/17", headers=headers("orders/17", new.token)).status_code == 200
        late = second.put("/orders/17", headers=headers("orders/17", old.token))
        assert late.status_code == 409, late.text
        assert seen == [Admitted("orders/17", new.token)]
    finally:
        for replica in replicas:
            replica.stop()


@pytest.fixture
def served(tmp_path: Path) -> Any:
    seen: list[Any] = []
    store = SqliteFence(tmp_path / "fence.sqlite")
    guard = fenced("orders/{order_id}", fence=store)
    service = Served(orders_app(guard, seen, store))
    service.store = store  # type: ignore[attr-defined]
    service.seen = seen  # type: ignore[attr-defined]
    service.guard = guard  # type: ignore[attr-defined]
    yield service
    service.stop()


def test_the_route_key_is_built_from_the_converted_parameters(served: Any) -> None:
    put = served.http.put
    assert put("/orders/17", headers=headers("orders/17", 5)).status_code == 200
    late = put("/orders/017", headers=headers("orders/17", 4))  # the same order, the same key
    assert late.status_code == 409, late.text
    assert put("/orders/0017", headers=headers("orders/17", 5)).status_code == 200
    bad = put("/orders/seventeen", headers=headers("orders/seventeen", 9))
    assert bad.status_code == 422 and bad.json()["detail"]["field"] == "order_id"
    # a Starlette convertor in the path ({item_id:int}) converts before the guard too
    assert put("/items/8", headers=headers("items/8", 3)).status_code == 200
    assert put("/items/008", headers=headers("items/8", 2)).status_code == 409
    assert served.seen == [Admitted("orders/17", 5)] * 2 + [Admitted("items/8", 3)]


def test_a_token_of_another_key_is_refused_and_the_real_holder_still_admitted(served: Any) -> None:
    put = served.http.put
    jam = put("/orders/17", headers=headers("orders/18", 40))  # orders/18's token, sent to 17
    assert jam.status_code == 422
    assert jam.json()["detail"]["field"] == "Tenure-Key" and "orders/18" in jam.text
    bare = put("/orders/17", headers={"Tenure-Token": "40"})  # no key: cannot be checked
    assert bare.status_code == 422 and bare.json()["detail"]["field"] == "Tenure-Key"
    assert served.store.current("orders/17") is None
    assert put("/orders/17", headers=headers("orders/17", 5)).status_code == 200


def test_the_guard_is_a_fence_for_its_leases_and_refuses_other_keys(
    live_server: Any, served: Any
) -> None:
    client = tenure.Client(live_server.url, token=live_server.token_for("worker"))
    with client.lease("orders/17", ttl=30, fences=[served.guard]) as lease:
        assert served.guard.current("orders/17") == lease.token
    with pytest.raises(tenure.FenceMisuse, match="orders/") as refused:
        client.acquire("order/17", ttl_ms=30_000, fences=[served.guard])
    assert refused.value.state == "key_mismatch"
    assert client.get_lease("order/17").state == "released"  # the grant was given back


def test_a_fence_bound_to_its_keys_refuses_a_lease_of_another_key(
    live_server: Any, tmp_path: Path
) -> None:
    """The guard fences ``reports/{name}``; a lease on ``report/nightly`` (a typo) admitted in
    the same store would close no window: refused, and the lease given back."""
    import sqlite3

    from tenure.fence import MemoryFence, TableFence

    client = tenure.Client(live_server.url, token=live_server.token_for("cron"))
    admin = tenure.Client(live_server.url, token=live_server.admin_token)
    for store in (
        SqliteFence(tmp_path / "f.sqlite", keys="reports/{name}"),
        MemoryFence(keys=["reports/{name}", "exports/{path:path}"]),
    ):
        with pytest.raises(tenure.FenceMisuse, match="reports/") as refused:
            client.acquire("report/nightly", ttl_ms=30_000, fences=[store])
        assert (refused.value.field, refused.value.state) == ("key", "key_mismatch")
        assert admin.get_lease("report/nightly").state == "released"
        with client.lease("reports/nightly", ttl=30, fences=[store]) as lease:
            assert store.current("reports/nightly") == lease.token
    with pytest.raises(tenure.FenceMisuse):
        MemoryFence(keys="reports/{name}").admit("reports/a/b", 1)  # {name}: one segment
    assert MemoryFence(keys="exports/{path:path}").admit("exports/a/b", 1) == 1
    db = sqlite3.connect(tmp_path / "app.sqlite")
    fence = TableFence(keys="reports/{name}")
    fence.install(db)
    db.commit()
    with pytest.raises(tenure.FenceMisuse), fence.transaction(db, "nightly", 5):
        pytest.fail("a guard on a key outside the fence's keys must not run")
    with fence.transaction(db, "reports/nightly", 5):
        pass
    db.close()
    with pytest.raises(tenure.InvalidRequest):
        MemoryFence(keys=[])
