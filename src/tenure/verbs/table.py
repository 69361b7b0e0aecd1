"""A verb, defined once: what it takes, what it does, what it answers and how that travels.

A :class:`Verb` is one entry of the table (``tenure.verbs.leases`` and its neighbours hold the
entries; :data:`tenure.verbs.registry.VERBS` lists them all). Everything that serves or calls a
verb is built from its entry:

- the REST route (:mod:`tenure.server.http.verb_routes`): ``method`` and ``path``, the body or
  query parsed with ``input``, ``run`` in the server's executor, ``wire`` as the JSON reply,
  ``reply`` and ``problems`` in the OpenAPI document;
- direct mode (:mod:`tenure.client.direct`): ``run`` on the database, then ``wire``, so both modes
  answer with the same JSON;
- the client's request and its reading of the reply (:meth:`Verb.call`): ``method``,
  ``path``, ``send`` for the arguments the client converts, ``parse``, and ``repeatable`` for
  the retry rules; the clients' methods call it with their arguments, no builder in between.

An entry says only what is particular to its verb; the rest comes from what it names:

    RENEW = LEASES.verb("renew", "POST /v1/leases/renew", RenewIn, _renew, LEASE, grouped=True)

- its :class:`Family` (``LEASES``) gives the tags and the problems its verbs may answer (an
  entry names other ``problems`` when it differs);
- the route is one string, the method and the path;
- its :class:`Reply` (``LEASE``) is how the result travels: ``wire``, ``parse`` and the schema;
- the operation's description is the run function's docstring (its lines joined, its blank
  lines kept as paragraph breaks);
- the client's conversions of arguments (``send``) come from the input's field types (an
  ``Instant`` may be given as a ``datetime``: :class:`tenure.verbs.call.Send`).

A verb whose path carries part of its input (an item's ``{id}``) has one input model with every
field; the JSON body's model is derived from it (the same name and fields, the path's left out).

Adding a verb is one entry here plus its decision in :mod:`tenure.core` and the service method
that runs it; ``docs/architecture.md`` walks through one.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, create_model

from tenure.core.models import Principal
from tenure.settings import Limits
from tenure.verbs.call import Call, Safety, Send, long_poll, segment
from tenure.verbs.wire import to_dict

if TYPE_CHECKING:  # the HTTP client reads the table without loading the service layer
    from tenure.service.leases import Service
    from tenure.service.principals import Principals
    from tenure.service.queue import WorkQueue

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out")
Parsed = TypeVar("Parsed")
Wire = dict[str, Any]
#: a path parameter of a route: ``{key}``, ``{key:path}`` or with another convertor
#: (``{name:principal}``)
PATH_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
#: the methods whose input travels (at least partly) as a JSON body; the others' as a query
BODY_METHODS = frozenset({"POST", "PATCH", "PUT"})
METHODS = BODY_METHODS | {"GET", "DELETE"}


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


@dataclass(frozen=True, eq=False, kw_only=True)
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
    #: the client's conversion of an argument before it is sent (``labels``: a tuple as a
    #: list; ``until``: a datetime as epoch milliseconds); the others are sent as given
    send: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: the arguments sent even when ``None`` (JSON ``null`` is a value to store); the others
    #: are left out when ``None`` (the server's default)
    nulls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.body is None and self.method in BODY_METHODS and PATH_PARAM.search(self.path):
            object.__setattr__(self, "body", body_model(self.input, self.path))

    def call(self, *, wait_s: float | None = None, **args: Any) -> Call[Out]:
        """The client's request of this verb: the path's parameters filled in from ``args``
        (each one URL path segment), the rest as the JSON body (or the query of a GET),
        ``None`` left out but for ``nulls``; its reply read with ``parse``; safe to repeat as
        ``repeatable`` says; a long poll (``wait_ms``) held by the server that long."""
        values = {k: self.send[k](v) if k in self.send else v for k, v in args.items()}
        values = {k: v for k, v in values.items() if v is not None or k in self.nulls}
        names = PATH_PARAM.findall(self.path)
        path_args = {name: values.pop(name, None) for name in names}
        path = PATH_PARAM.sub(lambda p: segment(path_args[p.group(1)], p.group(1)), self.path)
        safety = Safety.IDEMPOTENT if self.repeatable(values) else Safety.UNSAFE
        body, params = (values, None) if self.method in BODY_METHODS else (None, values or None)
        wait = long_poll(values.get("wait_ms")) if wait_s is None else wait_s
        return Call(self.name, self.method, path, self.parse, body, params, path_args, safety, wait)

    def __call__(self, services: Services, caller: Principal, args: In) -> Wire | bytes | None:
        """Run it and return the reply's JSON: what the server sends and direct mode answers."""
        return self.wire(self.run(services, caller, args))

    def args(self, values: Mapping[str, Any]) -> In:
        """The input from values that are already checked or will be (by the service): direct
        mode's arguments, which the service validates as it does on every path."""
        return self.input.model_construct(**values)


def body_model(input: type[BaseModel], path: str) -> type[BaseModel]:
    """The JSON body of a verb whose ``path`` carries some of ``input``: ``input``'s other
    fields, under its name, configuration and description (the OpenAPI document's schema)."""
    in_path = set(PATH_PARAM.findall(path))
    fields: dict[str, Any] = {
        name: (info.annotation, info)
        for name, info in input.model_fields.items()
        if name not in in_path
    }
    model: type[BaseModel] = create_model(
        input.__name__,
        __config__=input.model_config,
        __doc__=input.__doc__,
        __module__=input.__module__,
        **fields,
    )
    return model


@dataclass(frozen=True)
class Reply(Generic[Out]):
    """How a verb's result travels, shared by the verbs that answer alike: ``wire`` turns the
    result into the reply's JSON, ``parse`` turns that back (the client's side), ``schema``
    describes it (the OpenAPI document)."""

    wire: Callable[[Out], Wire | bytes | None]
    parse: Callable[[Any], Out]
    schema: type[BaseModel]

    @staticmethod
    def of(parse: Callable[[Any], Parsed], schema: type[BaseModel]) -> Reply[Parsed]:
        """The reply of a core model: its ``to_dict``, read back by ``parse``."""
        return Reply(to_dict, parse, schema)


@dataclass(frozen=True)
class Family:
    """What the verbs of one kind share: their tags in the API's reference and the statuses of
    the problems they may answer (an entry names others when it differs)."""

    tags: tuple[str, ...]
    problems: tuple[int, ...] = ()

    def verb(
        self,
        name: str,
        route: str,
        input: type[In],
        run: Callable[[Services, Principal, In], Out],
        reply: Reply[Out],
        *,
        problems: tuple[int, ...] | None = None,
        status: int = 200,
        repeatable: Callable[[Mapping[str, Any]], bool] = always,
        grouped: bool = False,
        nulls: tuple[str, ...] = (),
    ) -> Verb[In, Out]:
        """The entry of the verb ``name`` served at ``route`` (``"POST /v1/leases/renew"``):
        ``run`` on ``input``, answered as ``reply`` says, described by ``run``'s docstring."""
        method, _, path = route.partition(" ")
        if method not in METHODS or not path.startswith("/"):
            raise ValueError(f"{name}: a route is a method and a path ('GET /v1/me'): {route!r}")
        return Verb(
            name=name,
            method=method,
            path=path,
            input=input,
            run=run,
            wire=reply.wire,
            parse=reply.parse,
            reply=reply.schema,
            problems=self.problems if problems is None else problems,
            tags=self.tags,
            status=status,
            repeatable=repeatable,
            doc=described(run),
            grouped=grouped,
            send=sends(input),
            nulls=nulls,
        )


def described(run: Callable[..., Any]) -> str:
    """The description of an operation from its run function's docstring: the lines of a
    paragraph joined by spaces, paragraphs apart by a blank line (``""`` without one)."""
    paragraphs = inspect.cleandoc(run.__doc__ or "").split("\n\n")
    return "\n\n".join(" ".join(p.split("\n")) for p in paragraphs)


def sends(input: type[BaseModel]) -> dict[str, Callable[[Any], Any]]:
    """The client's conversion of each field of ``input`` whose type has one (its
    :class:`~tenure.verbs.call.Send`, also inside ``X | None``)."""
    found: dict[str, Callable[[Any], Any]] = {}
    for name, info in input.model_fields.items():
        for mark in [*info.metadata, *_marks(info.annotation)]:
            if isinstance(mark, Send):
                found[name] = mark.convert
    return found


def _marks(annotation: Any) -> list[Any]:
    """The ``Annotated`` metadata inside ``annotation`` (a union's members included)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return [*annotation.__metadata__, *_marks(typing.get_args(annotation)[0])]
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        return [mark for member in typing.get_args(annotation) for mark in _marks(member)]
    return []
