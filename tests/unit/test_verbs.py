"""Each verb is defined once: its REST route and the client's request are both built from its
entry in the table, so they cannot drift apart."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from tenure.client import _item_calls, _principal_calls
from tenure.client import _shared as sh
from tenure.server.http.app import create_app
from tenure.settings import Settings
from tenure.verbs.registry import BY_NAME, VERBS
from tenure.verbs.table import PATH_PARAM, Verb

#: the client's builders whose names are not their verb's (the operation id is the route's)
CLIENT_NAMES = {"whoami": "me", "show_principal": "get_principal", "ready_items": "ready_view"}
#: builders that serve two verbs, and the arguments that pick each one
BY_ARGUMENTS = {"my_queue": ("queue", {}), "queue_of": ("queue", {"principal": "a/b c"})}
BUILDER_MODULES = (sh, _principal_calls, _item_calls)


@pytest.fixture(scope="module")
def operations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """The app's OpenAPI operations: operation id -> (method, path)."""
    db = Path(tmp_path_factory.mktemp("verbs")) / "t.db"
    doc = create_app(Settings(db=f"sqlite:///{db}")).openapi()
    return {
        op["operationId"]: (method.upper(), path)
        for path, item in doc["paths"].items()
        for method, op in item.items()
    }


def test_every_verb_has_one_name() -> None:
    assert len(BY_NAME) == len(VERBS)


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_every_verb_is_a_route_of_the_openapi_document(
    verb: Verb[Any, Any], operations: dict[str, tuple[str, str]]
) -> None:
    openapi_path = PATH_PARAM.sub(lambda m: "{" + m.group(1) + "}", verb.path)
    assert operations.get(verb.name) == (verb.method, openapi_path)


def builder(verb: Verb[Any, Any]) -> Any:
    name = CLIENT_NAMES.get(verb.name, verb.name)
    found = [getattr(m, name) for m in BUILDER_MODULES if callable(getattr(m, name, None))]
    assert found, f"no client builder for {verb.name}"
    return found[0]


def sample(param: inspect.Parameter) -> Any:
    """A value for a required argument of a builder: a path segment that needs encoding."""
    annotation = str(param.annotation)
    if annotation.startswith("int"):
        return 7
    if "list" in annotation or "tuple" in annotation:
        return ["admin"]
    return "a/b c"


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_the_clients_request_is_the_routes(
    verb: Verb[Any, Any], operations: dict[str, tuple[str, str]]
) -> None:
    if verb.name in BY_ARGUMENTS:
        name, kwargs = BY_ARGUMENTS[verb.name]
        call = getattr(_item_calls, name)(**kwargs)
    else:
        build = builder(verb)
        params = inspect.signature(build).parameters.values()
        call = build(*[sample(p) for p in params if p.default is p.empty])
    method, path = operations[verb.name]
    # each path parameter is one encoded segment: it never holds a slash
    pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path))
    assert (call.op, call.method) == (verb.name, method)
    assert re.fullmatch(pattern, call.path), (call.path, path)
    assert (call.body is None) == (method in {"GET", "DELETE"})


#: routes written by hand: the event log's stream, the metrics, the health checks (and the
#: events page's long-poll, whose verb is in the table), and the dashboard's trade of a one-time
#: sign-in code (the one route without a bearer token: every verb has a caller)
HAND_ROUTES = {"event_stream", "metrics", "healthz", "readyz", "signin"}


def test_every_route_but_the_hand_written_is_a_verb(
    operations: dict[str, tuple[str, str]],
) -> None:
    routes = {name for name, (_, path) in operations.items() if path.startswith("/v1/")}
    assert routes - HAND_ROUTES - set(BY_NAME) == set()
