"""An entry of the verb table says only what is particular to its verb: the rest comes from its
family (tags, problems), its reply (wire, parse, schema), its run function's docstring (the
operation's description) and its input's field types (the client's conversions)."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime
from typing import Annotated, Any

import pytest
from pydantic import Field

from tenure.core.models import Principal
from tenure.verbs import call as c
from tenure.verbs.fields import Body, Instant, Labels
from tenure.verbs.registry import VERBS
from tenure.verbs.replies import MeReply
from tenure.verbs.table import Family, Reply, Services, Verb, described, sends

EXAMPLES = Family(tags=("examples",), problems=(401, 422))
ME = Reply(lambda p: {"principal": p.to_dict()}, lambda d: Principal.from_wire(d), MeReply)


class ExampleIn(Body):
    id: str
    until: Instant | None = None
    labels: Labels | None = None
    note: Annotated[str | None, Field(description="plain")] = None


def _example(services: Services, me: Principal, a: ExampleIn) -> Principal:
    """Do the example: the first line,
    the second line of the same paragraph.

    A second paragraph."""
    return me


def test_an_entry_takes_its_family_its_route_and_its_reply() -> None:
    verb = EXAMPLES.verb("example", "PATCH /v1/examples/{id}", ExampleIn, _example, ME)
    assert (verb.method, verb.path) == ("PATCH", "/v1/examples/{id}")
    assert (verb.tags, verb.problems) == (("examples",), (401, 422))
    assert (verb.wire, verb.parse, verb.reply) == (ME.wire, ME.parse, MeReply)
    assert verb.body is not None and "id" not in verb.body.model_fields  # the path's field
    other = EXAMPLES.verb("other", "GET /v1/other", ExampleIn, _example, ME, problems=(401,))
    assert other.problems == (401,)


def test_the_description_is_the_run_functions_docstring_as_paragraphs() -> None:
    verb = EXAMPLES.verb("example", "POST /v1/examples", ExampleIn, _example, ME)
    assert verb.doc == (
        "Do the example: the first line, the second line of the same paragraph.\n\n"
        "A second paragraph."
    )
    assert described(lambda: None) == ""


def test_the_clients_conversions_come_from_the_field_types() -> None:
    assert sends(ExampleIn) == {"until": c.to_millis, "labels": c.listed}
    verb = EXAMPLES.verb("example", "POST /v1/examples/{id}", ExampleIn, _example, ME)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    call = verb.call(id="a", until=at, labels=("x", "y"), note=None)
    assert call.body == {"until": round(at.timestamp() * 1000), "labels": ["x", "y"]}


@pytest.mark.parametrize("route", ["POST/v1/x", "FETCH /v1/x", "GET v1/x", "/v1/x"])
def test_a_route_that_is_not_a_method_and_a_path_stops_the_entry(route: str) -> None:
    with pytest.raises(ValueError, match="a route is a method and a path"):
        EXAMPLES.verb("bad", route, ExampleIn, _example, ME)


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_every_verb_is_described_by_its_run_function(verb: Verb[Any, Any]) -> None:
    assert verb.doc == described(verb.run)
    if verb.doc:
        assert inspect.getdoc(verb.run)
