"""Client and AsyncClient expose the same API: same public methods, same parameters."""

from __future__ import annotations

import asyncio
import inspect

import tenure
from tenure.client import (
    AsyncClient,
    AsyncItems,
    AsyncLeaseHandle,
    AsyncWorkHandle,
    Client,
    Items,
    LeaseHandle,
    WorkHandle,
)

ASYNC_NAMES = {
    "AsyncClient": "Client",
    "AsyncLeaseHandle": "LeaseHandle",
    "AsyncTransport": "SyncTransport",
    "AsyncItems": "Items",
    "AsyncWorkHandle": "WorkHandle",
}
NOT_COROUTINES = {"lease", "work", "events"}  # context managers; events: awaitable + iterable
ITEM_VERBS = {
    "create", "get", "list", "update", "claim", "renew", "extend", "release", "progress",
    "complete", "cancel", "reopen", "force_release", "reassign", "dispatch", "queue", "ready",
    "ready_view", "briefing", "work",
}  # fmt: skip


def public(cls: type) -> dict[str, object]:
    return {
        name: member
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


def normalised(annotation: object) -> str:
    text = str(annotation)
    for async_name, sync_name in ASYNC_NAMES.items():
        text = text.replace(async_name, sync_name)
    return text


def shape(func: object) -> list[tuple[str, object, object, str]]:
    sig = inspect.signature(func)  # type: ignore[arg-type]
    params = [
        (p.name, p.kind, p.default, normalised(p.annotation)) for p in sig.parameters.values()
    ]
    return [*params, ("return", None, None, normalised(sig.return_annotation))]


def test_clients_have_the_same_public_methods() -> None:
    assert set(public(Client)) == set(public(AsyncClient))
    expected = {
        "acquire", "renew", "renew_all", "extend", "release", "force_release", "get_lease",
        "list_leases", "fenced_write", "fenced_read", "events", "me", "add_principal",
        "revoke_token", "lease", "close", "stats", "timeline",
    }  # fmt: skip
    assert expected <= set(public(Client))


def test_clients_methods_take_the_same_parameters() -> None:
    for name, method in public(Client).items():
        other = getattr(AsyncClient, name)
        if name == "events":  # a list or an iterator; async: one object that is both
            assert shape(method)[:-1] == shape(other)[:-1]
            assert shape(method)[-1][-1] == "list[Event] | Iterator[Event]"
            assert shape(other)[-1][-1] == "AsyncEvents"
            continue
        assert shape(method) == shape(other), name
    assert shape(Client.__init__) == shape(AsyncClient.__init__)


def test_async_methods_are_coroutines_except_lease() -> None:
    for name, method in public(AsyncClient).items():
        assert inspect.iscoroutinefunction(method) == (name not in NOT_COROUTINES), name
    for name, method in public(Client).items():
        assert not inspect.iscoroutinefunction(method), name


def test_lease_handles_have_the_same_api() -> None:
    assert set(public(LeaseHandle)) == set(public(AsyncLeaseHandle))
    handles = (LeaseHandle(object(), "k"), AsyncLeaseHandle(object(), "k"))  # type: ignore[arg-type]
    for handle in handles:
        for name in ("key", "lost", "lost_reason", "check", "release", "ttl", "deadline"):
            assert hasattr(handle, name), name
        for name in ("token", "expires_at", "lease"):
            assert isinstance(getattr(type(handle), name), property), name
    for name, member in public(LeaseHandle).items():
        other = public(AsyncLeaseHandle)[name]
        if isinstance(member, property):
            assert isinstance(other, property), name
        else:
            assert shape(member) == shape(other), name


def test_top_level_exports() -> None:
    for name in ("Client", "AsyncClient", "LeaseHandle", "AsyncLeaseHandle"):
        assert name in tenure.__all__
        assert getattr(tenure, name) is getattr(tenure.client, name)
    assert tenure.__all__ == sorted(tenure.__all__, key=str)


def test_items_namespaces_have_the_same_api() -> None:
    assert set(public(Items)) == set(public(AsyncItems)) == ITEM_VERBS
    for name, method in public(Items).items():
        assert shape(method) == shape(getattr(AsyncItems, name)), name
        assert not inspect.iscoroutinefunction(method), name
    for name, method in public(AsyncItems).items():
        assert inspect.iscoroutinefunction(method) == (name not in NOT_COROUTINES), name


def test_both_clients_carry_the_items_namespace() -> None:
    with Client("http://127.0.0.1:9", token="t") as client:
        assert isinstance(client.items, Items)
    aclient = AsyncClient("http://127.0.0.1:9", token="t")
    assert isinstance(aclient.items, AsyncItems)
    asyncio.run(aclient.close())


def test_work_handles_have_the_same_api() -> None:
    assert set(public(WorkHandle)) == set(public(AsyncWorkHandle))
    handles = (WorkHandle(object(), "i"), AsyncWorkHandle(object(), "i"))  # type: ignore[arg-type]
    for handle in handles:
        for name in ("key", "item_id", "lost", "lost_reason", "check", "wait_lost", "release"):
            assert hasattr(handle, name), name
        for name in ("progress", "complete"):
            assert callable(getattr(handle, name)), name
        for name in ("epoch", "token", "item", "claim", "completion", "lease", "expires_at"):
            assert isinstance(getattr(type(handle), name), property), name
        assert handle.key == "items/i"
    for name, member in public(WorkHandle).items():
        other = public(AsyncWorkHandle)[name]
        if isinstance(member, property):
            assert isinstance(other, property), name
        else:
            assert shape(member) == shape(other), name
            awaited = name in {"progress", "complete", "release", "wait_lost"}
            assert inspect.iscoroutinefunction(other) == awaited, name


def test_the_ownership_verbs_take_the_documented_arguments() -> None:
    for items in (Items, AsyncItems):
        assert list(inspect.signature(items.reassign).parameters) == [
            "self", "item_id", "to", "reason",
        ]  # fmt: skip
        dispatch = inspect.signature(items.dispatch).parameters
        assert (dispatch["takeover"].default, dispatch["reason"].default) == (False, None)
        assert inspect.signature(items.complete).parameters["follow_ups"].default is None
        assert inspect.signature(items.create).parameters["parent_epoch"].default is None
    for handle in (WorkHandle, AsyncWorkHandle):
        assert inspect.signature(handle.complete).parameters["follow_ups"].default is None
