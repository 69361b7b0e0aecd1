"""A faster ``__init__`` for the frozen dataclasses built on every request.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
(it must step around the class's own ``__setattr__``, which refuses): about 1.5 us for a
13-field :class:`~tenure.core.models.KeyRecord`, and every lease verb builds several. The
``__init__`` :func:`quick_init` puts in its place takes the same arguments with the same
defaults and fills the instance's ``__dict__`` in one call (0.65 us). Everything else is the
dataclass's own: the instances stay frozen, equal, hashable and printable as before.

Only for plain frozen dataclasses: no ``__post_init__``, ``InitVar``, keyword-only fields or
``__slots__`` (it refuses them).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

C = TypeVar("C", bound=type[Any])


def quick_init(cls: C) -> C:
    """Give the frozen dataclass ``cls`` the faster ``__init__``."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} is not a plain frozen dataclass")
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} has __slots__")
    fields = dataclasses.fields(cls)
    if any(f.kw_only or not f.init for f in fields):
        raise TypeError(f"{cls.__name__} has keyword-only or non-init fields")
    scope: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    args, body = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            scope[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            args.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING: {f.name} = _factory_{f.name}()")
        else:
            args.append(f.name)
    body.append(f"    self.__dict__.update({', '.join(f'{f.name}={f.name}' for f in fields)})")
    source = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body)
    namespace: dict[str, Any] = {}
    exec(source, scope, namespace)  # the same way dataclasses builds its own __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init
    return cls
