"""A verb, defined once: what it takes, what it does, what it answers and how that travels.

A :class:`Verb` is one entry of the table (``tenure.verbs.leases`` and its neighbours hold the
entries; :data:`tenure.verbs.registry.VERBS` lists them all). Everything that serves or calls a
verb is built from its entry:

- the REST route (:mod:`tenure.server.http.verb_routes`): ``method`` and ``path``, the body or
  query parsed with ``input``, ``run`` in the server's executor, ``wire`` as the JSON reply,
  ``reply`` and ``problems`` in the OpenAPI document;
- direct mode (:mod:`tenure.client.direct`): ``run`` on the database, then ``wire``, so both modes
  answer with the same JSON;
- the client's request and its reading of the reply (:func:`tenure.client._shared.verb_call`):
  ``method``, ``path``, ``parse``, and ``repeatable`` for the retry rules.

Adding a verb is one entry here plus its decision in :mod:`tenure.core` and the service method
that runs it; ``docs/architecture.md`` walks through one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from tenure.core.models import Principal
from tenure.settings import Limits

if TYPE_CHECKING:  # the HTTP client reads the table without loading the service layer
    from tenure.service.leases import Service
    from tenure.service.principals import Principals
    from tenure.service.queue import WorkQueue

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out")
Wire = dict[str, Any]
#: a path parameter of a route: ``{key}``, ``{key:path}`` or with another convertor
#: (``{name:principal}``)
PATH_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
#: the methods whose input travels (at least partly) as a JSON body; the others' as a query
BODY_METHODS = frozenset({"POST", "PATCH", "PUT"})


@dataclass(frozen=True)
class Services:
    """What a verb runs on: the lease service (with its work queue), the principals, and the
    bounds on one request's work (the lists' page caps and byte budgets)."""

    leases: Service
    principals: Principals
    limits: Limits = field(default_factory=Limits)

    @property
    def items(self) -> WorkQueue:
        return self.leases.items


def always(_: Mapping[str, Any]) -> bool:
    return True


def never(_: Mapping[str, Any]) -> bool:
    return False


@dataclass(frozen=True, eq=False)
class Verb(Generic[In, Out]):
    """One verb. ``run`` gets the services, the caller and the parsed input; it does the work
    (every rule is the service's) and returns a model of :mod:`tenure.core`, which ``wire``
    turns into the reply's JSON and ``parse`` turns back (the client's side)."""

    #: the client's method and the REST operation id (``acquire``, ``claim_item``, …)
    name: str
    method: str
    #: the route, with FastAPI's path parameters (``/v1/leases/{key:path}``); a POST's input
    #: is its JSON body, a GET's or DELETE's its path parameters and query string
    path: str
    input: type[In]
    run: Callable[[Services, Principal, In], Out]
    #: the reply's JSON (``bytes``: JSON the database wrote; ``None``: no body, e.g. a 204)
    wire: Callable[[Out], Wire | bytes | None]
    parse: Callable[[Any], Out]
    #: the reply's schema, for the OpenAPI document
    reply: type[BaseModel]
    #: the statuses of the problems it may answer with, besides 200
    problems: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    status: int = 200
    #: may the client send it again after a failure that left its outcome unknown? Decided on
    #: the request's own arguments (a release *with* a token is, one without is not)
    repeatable: Callable[[Mapping[str, Any]], bool] = always
    #: the description of the operation (the route's docstring)
    doc: str = ""
    #: a POST's or PATCH's JSON body when the path carries some of the input (``{id}``):
    #: ``input`` is then the body's fields and the path's (default: the body is ``input``)
    body: type[BaseModel] | None = None
    #: the server runs it in its executor's group commits (one transaction and one sync for a
    #: moment's calls) instead of a worker thread: a write of one key, whose service call runs
    #: in one key transaction (``Service.group`` may hold it open for others)
    grouped: bool = False

    def __call__(self, services: Services, caller: Principal, args: In) -> Wire | bytes | None:
        """Run it and return the reply's JSON: what the server sends and direct mode answers."""
        return self.wire(self.run(services, caller, args))

    def args(self, values: Mapping[str, Any]) -> In:
        """The input from values that are already checked or will be (by the service): direct
        mode's arguments, which the service validates as it does on every path."""
        return self.input.model_construct(**values)
