"""Each verb is defined once: its REST route and the client's request are both built from its
entry in the table, so they cannot drift apart."""

from __future__ import annotations

import dataclasses
import re
import types
from pathlib import Path
from typing import Any

import pytest

from tenure.server.http.app import create_app
from tenure.settings import Settings
from tenure.verbs.registry import BY_NAME, MODULES, VERBS, unlisted
from tenure.verbs.table import PATH_PARAM, Verb


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


def sample(name: str, annotation: Any) -> Any:
    """A value for a required field: a path segment that needs encoding, an int, a list."""
    shown = str(annotation)
    if name == "roles":
        return ["admin"]
    if shown.startswith(("int", "typing.Annotated[int")) or "int" in shown.split("[")[0]:
        return 7
    return "a/b c"


def request(verb: Verb[Any, Any]) -> Any:
    """The client's request of ``verb`` (its entry's ``call``) with its required fields."""
    required = {n: f for n, f in verb.input.model_fields.items() if f.is_required()}
    return verb.call(**{n: sample(n, f.annotation) for n, f in required.items()})


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_the_clients_request_is_the_routes(
    verb: Verb[Any, Any], operations: dict[str, tuple[str, str]]
) -> None:
    call = request(verb)
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


def test_a_verb_left_out_of_the_list_or_named_twice_is_found() -> None:
    """The registry's import-time check: an entry defined but not listed has no route."""
    scratch = types.ModuleType("tenure.verbs.scratch")
    scratch.TRANSFER = replace_name(VERBS[0], "transfer")  # type: ignore[attr-defined]
    assert unlisted([scratch], VERBS) == ["tenure.verbs.scratch.TRANSFER"]
    assert unlisted([], [*VERBS, replace_name(VERBS[0], VERBS[0].name)]) == [
        f"{VERBS[0].name} (twice)"
    ]
    assert unlisted(MODULES, VERBS) == []


def replace_name(verb: Verb[Any, Any], name: str) -> Verb[Any, Any]:
    return dataclasses.replace(verb, name=name)
