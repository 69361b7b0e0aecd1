"""The schema of a reply, derived from the core model it sends.

A reply's JSON is a core model's ``to_dict``: its fields, each always sent. :func:`wire_model`
builds the pydantic model that describes that JSON (for the OpenAPI document, MCP's structured
output, and the tests that validate replies) from the dataclass itself: its fields in order,
their types (a tuple as a list, a nested core model as its own reply model, ``X | None`` kept),
every one required, no other field allowed. What the dataclass cannot say is given beside it:
a field's description, a narrower type (``roles``: the two role names), a field left out
(``writer``: never sent), a wire name (``from`` for ``from_``).

A field added to a core model is in its schema at once; ``tests/unit/test_reply_schemas.py``
checks that each model's ``to_dict`` sends exactly its schema's fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

M = TypeVar("M", bound=BaseModel)
#: the reply model of each core model derived so far: a nested field of that type uses it
DERIVED: dict[type, type[BaseModel]] = {}


class Out(BaseModel):
    """A reply: exactly these fields (the schema says ``additionalProperties: false``)."""

    model_config = ConfigDict(extra="forbid")


class AliasedOut(Out):
    """A reply with a field whose JSON name is not a Python name (``from``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def wire_model(
    source: type,
    name: str,
    *,
    describe: Mapping[str, str] | None = None,
    types_: Mapping[str, Any] | None = None,
    exclude: tuple[str, ...] = (),
    alias: Mapping[str, str] | None = None,
    first: tuple[str, ...] = (),
    doc: str | None = None,
    base: type[BaseModel] = Out,
) -> type[BaseModel]:
    """The reply model of ``source`` (a dataclass of :mod:`tenure.core`), named ``name``.

    ``describe``: descriptions by field; ``types_``: a field's wire type instead of the one
    derived; ``exclude``: fields ``to_dict`` does not send; ``alias``: a field's JSON name;
    ``first``: the fields ``to_dict`` sends ahead of the dataclass's order (the schema and
    MCP's structured output keep the wire's order)."""
    describe, types_, alias = describe or {}, types_ or {}, alias or {}
    hints = typing.get_type_hints(source)
    fields: dict[str, Any] = {}
    ordered = sorted(dataclasses.fields(source), key=lambda f: f.name not in first)
    ordered.sort(key=lambda f: first.index(f.name) if f.name in first else len(first))
    for f in ordered:
        if f.name in exclude:
            continue
        wire = types_.get(f.name, None) or _wire_type(hints[f.name])
        fields[f.name] = (_described(wire, describe.get(f.name), alias.get(f.name)), ...)
    model: type[BaseModel] = create_model(
        name,
        __base__=AliasedOut if alias and base is Out else base,
        __doc__=doc,
        __module__=base.__module__,
        **fields,
    )
    DERIVED.setdefault(source, model)
    return model


def _described(wire: Any, description: str | None, alias: str | None) -> Any:
    """``wire`` with a description and a JSON name, if given (never hiding its own)."""
    if description is not None:
        wire = Annotated[wire, Field(description=description)]
    if alias is not None:
        wire = Annotated[wire, Field(alias=alias)]
    return wire


def _wire_type(hint: Any) -> Any:
    """The JSON type of a dataclass field's type: tuples as lists, core models as their
    reply models, unions and containers element by element."""
    if isinstance(hint, type) and hint in DERIVED:
        return DERIVED[hint]
    if dataclasses.is_dataclass(hint):
        raise TypeError(f"{getattr(hint, '__name__', hint)}: derive its reply model first")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        return list[_wire_type(args[0])]  # type: ignore[misc]
    if origin is list:
        return list[_wire_type(args[0])]  # type: ignore[misc]
    if origin in (types.UnionType, typing.Union):
        wired = [_wire_type(a) for a in args]
        result = wired[0]
        for one in wired[1:]:
            result = result | one
        return result
    return hint


def wire(source: type, **options: Any) -> Callable[[type[M]], type[M]]:
    """A class decorator: the reply model of ``source`` under the decorated class's name and
    description, with its fields derived (:func:`wire_model`, whose ``options`` it takes).

    The class written is the model's base: it names the model for the OpenAPI document and
    for the type checker, and holds anything more a reply needs."""

    def derive(stub: type[M]) -> type[M]:
        model = wire_model(source, stub.__name__, doc=stub.__doc__, base=stub, **options)
        return model  # type: ignore[return-value]  # a subclass of the stub

    return derive
