"""Sessions: which running holder under a principal a client is.

Several processes that share one principal's token are several sessions, and exclude each other
like strangers: a lease is renewed by re-acquiring it only from the session that holds it, a
release without a token ends only the session's own lease, and ``renew_all`` renews only the
session's leases. A session is a short string the client sends with ``acquire``, ``claim``,
``dispatch``, ``renew_all`` and with a release that carries no token; ``""`` is the principal's
default session.

Each :class:`~tenure.client.Client` and :class:`~tenure.client.AsyncClient` object is a session
of its own unless told otherwise: ``session=`` names one, else ``TENURE_SESSION`` (set by
``tenure run`` and ``tenure dispatch`` for their command), else :func:`new_session` makes a
random one. The names carry the host and process (``py:web-1:4242:9f2c1a7b``) so that a lease
listing says which process holds what.
"""

from __future__ import annotations

import os
import re
import secrets
import socket

from tenure.core import validate as v
from tenure.settings import env_session

_HOST_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
HOST_CHARS = 48  # a session is at most 128 bytes


def host_name() -> str:
    """This host's name, shortened to what a session name holds."""
    try:
        name = socket.gethostname()
    except OSError:
        name = ""
    return _HOST_CHARS.sub("-", name)[:HOST_CHARS].strip("-") or "host"


def new_session(kind: str = "py", *, pid: bool = True) -> str:
    """A fresh session name: ``kind:host:pid:random`` (``kind:host:random`` without ``pid``)."""
    parts = [kind, host_name(), *([str(os.getpid())] if pid else []), secrets.token_hex(4)]
    return ":".join(parts)


def client_session(given: str | None) -> str:
    """The session of a new client object: ``given``, else ``TENURE_SESSION``, else a new one.
    ``""`` (given) is the principal's default session."""
    if given is None:
        given = env_session() or new_session()
    return v.check_client_session(given)


__all__ = ["client_session", "host_name", "new_session"]
