"""One request of a verb, whichever way it travels: :class:`Call`, built by the verb's entry
(:meth:`tenure.verbs.table.Verb.call`), and :class:`Safety`, whether it may be sent again.

Nothing here does I/O: the clients hand a call to their transport (HTTP, or the database in
direct mode) and read the reply with ``parse``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from tenure.errors import InvalidRequest

T = TypeVar("T")


class Safety(enum.Enum):
    """How safe it is to repeat a call whose outcome is unknown."""

    IDEMPOTENT = "idempotent"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, independent of how it travels.

    ``op`` names the verb (direct mode dispatches on it); ``path_args`` are the values encoded
    in ``path``; ``body`` and ``params`` use the REST field names, ``None`` values left out.
    """

    op: str
    method: str
    path: str
    parse: Callable[[Any], T]
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    path_args: dict[str, Any] = field(default_factory=dict)
    safety: Safety = Safety.IDEMPOTENT
    wait_s: float = 0.0  # how long the server may hold the request (long poll)

    def args(self) -> dict[str, Any]:
        """Every argument of the call by its REST name (for direct mode)."""
        return {**self.path_args, **(self.params or {}), **(self.body or {})}


def segment(value: Any, field: str = "key") -> str:
    """``value`` as one URL path segment: everything reserved encoded, ``/`` included."""
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{field}: must be a non-empty string", field=field)
    encoded = quote(value, safe="")
    if encoded in (".", ".."):  # dot segments would be resolved away by URL normalisation
        encoded = encoded.replace(".", "%2E")
    return encoded


def long_poll(wait_ms: Any) -> float:
    """How long the server may hold a request that waits ``wait_ms`` (seconds; 0: no wait)."""
    return wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0


# the conversions of the arguments a client sends (a verb's ``send``) ------------------------
@dataclass(frozen=True)
class Send:
    """A field type's mark (``Annotated[..., Send(to_millis)]``): the client converts an
    argument of that type with ``convert`` before sending it (a verb's ``send`` is read from its
    input's fields)."""

    convert: Callable[[Any], Any]


def to_millis(until: int | datetime | None) -> int | None:
    """An instant as epoch milliseconds (a ``datetime`` must carry its time zone)."""
    if until is None or isinstance(until, int):
        return until
    if isinstance(until, datetime):
        if until.tzinfo is None:
            raise InvalidRequest("until: a datetime needs a time zone", field="until")
        return round(until.timestamp() * 1000)
    return until  # let the server name the wrong type


def listed(values: Any) -> Any:
    """A list for JSON; a lone string stays a string so the server names the wrong type."""
    if isinstance(values, list | tuple | set | frozenset):
        return list(values)
    return values


def unless_false(flag: Any) -> Any:
    """A flag sent only when set (an older server takes a request without it)."""
    return None if flag is False else flag


def unless_key(scope: Any) -> Any:
    """A lease's ``scope`` sent only when it is not the default ``key`` (an older server takes
    a request without it)."""
    return None if scope == "key" else scope
