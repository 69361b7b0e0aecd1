"""The reply of a record that is just its fields, written once."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class Record:
    """Mixed into a frozen dataclass whose reply is its fields, as :func:`dataclasses.asdict`
    gives them (a record in a field as its own fields, lists and dicts copied). A model on a hot
    path, or whose reply is not its fields, writes its own ``to_dict``
    (:class:`~tenure.core.models.Lease`)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast("DataclassInstance", self))
