"""JSON for the command hook without importing :mod:`json`: the standard library's own C
scanner and string encoder (``_json``), which ``json`` wraps. ``import json`` pulls in ``re``
and ``enum`` (about a fifth of the hook's start-up); these two functions need neither. Where
``_json`` lacks them (another Python), :mod:`json` itself is used.

:func:`loads` reads what :func:`json.loads` reads (and raises a ``ValueError`` where it does);
:func:`dumps` writes plain data (objects with string keys, lists, strings, numbers, booleans,
``None``) as ``json.dumps`` does with ``ensure_ascii``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"


class _Context:
    """What ``_json.make_scanner`` reads from ``json.JSONDecoder``: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity, as json.loads reads them


def _native() -> tuple[Any, Any]:
    """``_json``'s scanner (set up as :mod:`json` sets it up) and string encoder, or ``None``s."""
    try:
        import _json

        scanner = _json.make_scanner(_Context())  # type: ignore[arg-type]
        return scanner, _json.encode_basestring_ascii
    except (ImportError, AttributeError):  # pragma: no cover (CPython has both)
        return None, None


_scan, _quote_c = _native()


def loads(text: str | bytes) -> Any:
    """The JSON value of ``text`` (bytes are read as UTF-8); ``ValueError`` when it is not one
    JSON value (with nothing but whitespace around it)."""
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8")
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"Expecting value: char {stop.value}") from None
    if text[end:].strip(WHITESPACE):
        raise ValueError(f"Extra data: char {end}")
    return value


def _quote(text: str) -> str:
    if _quote_c is None:  # pragma: no cover
        import json

        return json.dumps(text)
    return str(_quote_c(text))


def dumps(value: Any) -> str:
    """``value`` (plain data) as compact-spaced JSON text, non-ASCII escaped."""
    if isinstance(value, str):
        return _quote(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not plain JSON data")
