"""The path convertors of the REST routes beyond Starlette's own."""

from __future__ import annotations

from starlette.convertors import PathConvertor, register_url_convertor


class PrincipalPath(PathConvertor):
    """A principal's name in a path, slashes included, but never the path of one of its tokens
    (``jo/tokens/0123456789ab``): that one is the token route's, and its other methods are
    ``405``, not a principal named ``jo/tokens/0123456789ab``."""

    regex = r"(?!.*/tokens/[0-9a-f]{12}$).+"


def install() -> None:
    """Make the convertors known to Starlette (before a route's path names them)."""
    register_url_convertor("principal", PrincipalPath())
